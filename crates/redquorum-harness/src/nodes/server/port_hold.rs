//! A killed node's port, kept bound (not listening) until the node starts
//! again. Connecting to it is refused, as to a dead server; but while it
//! is down no other process asking the system for a free port (a parallel
//! test starting its own node: `free_port`) is handed it, whose server would
//! otherwise answer in the dead node's place.

use std::net::SocketAddr;

use tokio::net::TcpSocket;

/// The node's port and its cluster bus port, bound while the node is down.
#[derive(Debug)]
pub(in crate::nodes) struct PortHold {
    _bound: Vec<TcpSocket>,
}

impl PortHold {
    /// Binds `port` and its bus port where it can (a port another process
    /// holds stays theirs).
    pub(in crate::nodes) fn bind(port: u16) -> Self {
        let ports = [Some(port), port.checked_add(super::BUS_PORT_OFFSET)];
        Self {
            _bound: ports.into_iter().flatten().filter_map(bind_one).collect(),
        }
    }
}

/// Without `SO_REUSEADDR` first: then no one binds the port, not even a
/// server asking for it by number. The killed server's connections left
/// in TIME_WAIT refuse that; with `SO_REUSEADDR` the system still hands a
/// bound port to no one asking for any free port.
fn bind_one(port: u16) -> Option<TcpSocket> {
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    [false, true].into_iter().find_map(|reuse| {
        let socket = TcpSocket::new_v4().ok()?;
        socket.set_reuseaddr(reuse).ok()?;
        socket.bind(address).ok()?;
        Some(socket)
    })
}
