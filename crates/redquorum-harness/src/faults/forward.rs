//! How a proxy forwards bytes: the [`ProxyMode`] it applies, and the tokio
//! tasks that accept connections, connect each to the node, and pump each
//! direction chunk by chunk under the current mode (each change is seen by
//! every open connection on its next chunk), resetting them on demand.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What the proxy does to the bytes it forwards.
///
/// # Examples
///
/// ```
/// use redquorum_harness::ProxyMode;
/// assert_eq!(ProxyMode::default(), ProxyMode::Pass);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ProxyMode {
    /// Forward at once.
    #[default]
    Pass,
    /// Hold every chunk for this long before forwarding it (each way).
    Latency(Duration),
    /// Hold every reply chunk (node to client) this long; requests pass at
    /// once: the node acts at once and its answer comes late.
    SlowReplies(Duration),
    /// Read but hold everything; forward it, in order, when healed.
    Stall,
    /// Reset new connections at once (open ones were reset on entering this mode).
    Refuse,
}

/// Accepts connections until the proxy shuts down, each forwarded on a task of its own.
pub(super) async fn accept_loop(
    listener: TcpListener,
    target: SocketAddr,
    mode: watch::Receiver<ProxyMode>,
    resets: watch::Receiver<u64>,
) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            // Out of file descriptors or similar: back off instead of spinning.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let mode = mode.clone();
        let resets = resets.clone();
        tokio::spawn(connection(client, target, mode, resets));
    }
}

/// Forwards one client connection to `target` until either side closes,
/// or resets both when the proxy resets its connections.
async fn connection(
    client: TcpStream,
    target: SocketAddr,
    mode: watch::Receiver<ProxyMode>,
    mut resets: watch::Receiver<u64>,
) {
    resets.mark_unchanged();
    if *mode.borrow() == ProxyMode::Refuse {
        let _ = client.set_zero_linger();
        return;
    }
    let Ok(server) = TcpStream::connect(target).await else {
        let _ = client.set_zero_linger();
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let reset = tokio::select! {
        _ = pump(&mut client_read, &mut server_write, mode.clone(), false) => false,
        _ = pump(&mut server_read, &mut client_write, mode, true) => false,
        _ = resets.changed() => true,
    };
    if reset {
        // RST instead of FIN: the client sees "connection reset", as after a middlebox drop.
        let _ = client_read.as_ref().set_zero_linger();
        let _ = server_read.as_ref().set_zero_linger();
    }
}

/// Copies one direction (`replies`: node to client), applying the current
/// mode to each chunk.
async fn pump(
    from: &mut OwnedReadHalf,
    to: &mut OwnedWriteHalf,
    mut mode: watch::Receiver<ProxyMode>,
    replies: bool,
) -> io::Result<()> {
    let mut buf = vec![0_u8; 16 * 1024];
    loop {
        let n = from.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        loop {
            let current = *mode.borrow_and_update();
            match current {
                ProxyMode::Stall => {
                    if mode.changed().await.is_err() {
                        return Ok(());
                    }
                }
                ProxyMode::Latency(delay) => {
                    tokio::time::sleep(delay).await;
                    break;
                }
                ProxyMode::SlowReplies(delay) if replies => {
                    tokio::time::sleep(delay).await;
                    break;
                }
                ProxyMode::SlowReplies(_) | ProxyMode::Pass | ProxyMode::Refuse => break,
            }
        }
        to.write_all(&buf[..n]).await?;
    }
}
