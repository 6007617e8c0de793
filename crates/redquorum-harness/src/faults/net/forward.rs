//! How a proxy forwards bytes: the [`ProxyMode`] it applies, and the tokio
//! tasks that accept connections, connect each to the node, and pump each
//! direction chunk by chunk under the current mode (each change is seen by
//! every open connection on its next chunk), resetting them on demand. Each
//! chunk is also read for the proxy's script tally (`script_tally.rs`).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::aim::{Aim, Aimed};
use super::overtake::{OVERTAKE_WITHIN, Overtake};
use super::script_tally::{ScriptTally, Watch};
use super::side::SideConnection;

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
    /// Empty the node's script cache (`SCRIPT FLUSH`, on a connection of
    /// the proxy's own) right before forwarding one call by digest
    /// (`EVALSHA`) in three on each connection, and every call of twice the
    /// smallest call's keys and arguments (a batch of operations: `aim.rs`):
    /// that call answers NOSCRIPT however recently the script was loaded,
    /// while the client's other calls are in flight. Before a NOSCRIPT
    /// answer reaches the client, the proxy loads back the script bodies
    /// clients sent it before (`SCRIPT LOAD`), as another client could: the
    /// calls the client sends next (an unwind after an acquire that said
    /// NOSCRIPT) run at once, ahead of any late resend. A batch's NOSCRIPT
    /// answer also waits (at most 20 ms) until the client's next call has
    /// gone out behind it (`overtake.rs`), so the client must split it.
    FlushScripts,
}

/// Accepts connections until the proxy shuts down, each forwarded on a task of its own.
pub(super) async fn accept_loop(
    listener: TcpListener,
    target: SocketAddr,
    mode: watch::Receiver<ProxyMode>,
    resets: watch::Receiver<u64>,
    tally: Arc<ScriptTally>,
) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            // Out of file descriptors or similar: back off instead of spinning.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let mode = mode.clone();
        let resets = resets.clone();
        tokio::spawn(connection(client, target, mode, resets, tally.clone()));
    }
}

/// Forwards one client connection to `target` until either side closes,
/// or resets both when the proxy resets its connections.
async fn connection(
    client: TcpStream,
    target: SocketAddr,
    mode: watch::Receiver<ProxyMode>,
    mut resets: watch::Receiver<u64>,
    tally: Arc<ScriptTally>,
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
    let overtake = Arc::new(Overtake::default());
    let requests = Pump {
        mode: mode.clone(),
        replies: false,
        tally: tally.clone(),
        target,
        overtake: overtake.clone(),
    };
    let replies = Pump {
        mode,
        replies: true,
        tally,
        target,
        overtake,
    };
    let reset = tokio::select! {
        _ = requests.run(&mut client_read, &mut server_write) => false,
        _ = replies.run(&mut server_read, &mut client_write) => false,
        _ = resets.changed() => true,
    };
    if reset {
        // RST instead of FIN: the client sees "connection reset", as after a middlebox drop.
        let _ = client_read.as_ref().set_zero_linger();
        let _ = server_read.as_ref().set_zero_linger();
    }
}

/// One direction of a connection (`replies`: node to client).
struct Pump {
    mode: watch::Receiver<ProxyMode>,
    replies: bool,
    tally: Arc<ScriptTally>,
    /// The node, for the flushes of [`ProxyMode::FlushScripts`].
    target: SocketAddr,
    /// The connection's batches a flush struck, and the calls after them
    /// (shared by its two directions).
    overtake: Arc<Overtake>,
}

impl Pump {
    /// Copies the direction, applying the current mode to each chunk.
    async fn run(mut self, from: &mut OwnedReadHalf, to: &mut OwnedWriteHalf) -> io::Result<()> {
        let mut buf = vec![0_u8; 16 * 1024];
        let mut watch = Watch::new(self.replies);
        // The proxy's own connection to the node, for flushes (requests)
        // or loading the scripts back (replies).
        let (mut side, mut aim) = (SideConnection::new(self.target), Aim::default());
        loop {
            let n = from.read(&mut buf).await?;
            if n == 0 {
                return Ok(());
            }
            let seen = watch.see(&buf[..n], &self.tally);
            let flushing = *self.mode.borrow() == ProxyMode::FlushScripts;
            let aimed = if self.replies {
                None
            } else {
                aim.aimed(&buf[..n], seen.by_digest)
            };
            if let Some(aimed) = aimed.filter(|_| flushing)
                && side.flush()
            {
                self.tally.flushed(aimed == Aimed::Wide);
                if aimed == Aimed::Wide {
                    self.overtake.batch_flushed();
                }
            }
            if seen.noscript && flushing {
                // Held back until the node has the scripts again, and
                // measured: the fault delays this answer and those behind it.
                let _hold = self.tally.hold();
                if side.load_back(&self.tally.bodies()).await {
                    self.tally.reloaded();
                }
                // A batch's answer also waits for the client's next call.
                if let Some(passed) = self.overtake.overtaken(OVERTAKE_WITHIN).await {
                    self.tally.batch_answer_held(passed);
                }
            }
            self.apply_mode().await?;
            to.write_all(&buf[..n]).await?;
            if !self.replies {
                self.overtake.forwarded();
            }
        }
    }

    /// Waits as the current mode says before a chunk is forwarded.
    async fn apply_mode(&mut self) -> io::Result<()> {
        let (mode, replies) = (&mut self.mode, self.replies);
        loop {
            let current = *mode.borrow_and_update();
            match current {
                ProxyMode::Stall => {
                    if mode.changed().await.is_err() {
                        // The proxy is gone: stop forwarding.
                        return Err(io::ErrorKind::BrokenPipe.into());
                    }
                }
                ProxyMode::Latency(delay) => {
                    tokio::time::sleep(delay).await;
                    return Ok(());
                }
                ProxyMode::SlowReplies(delay) if replies => {
                    tokio::time::sleep(delay).await;
                    return Ok(());
                }
                ProxyMode::SlowReplies(_)
                | ProxyMode::Pass
                | ProxyMode::Refuse
                | ProxyMode::FlushScripts => return Ok(()),
            }
        }
    }
}
