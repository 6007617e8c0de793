//! A proxy's own connection to its node, for the script faults of
//! [`ProxyMode::FlushScripts`](super::ProxyMode::FlushScripts): a flush
//! written ahead of a call never holds that call back (it is skipped while
//! the connection is still opening or its buffer is full), so the fault
//! never delays a client's write; loading the scripts back holds the
//! NOSCRIPT answer it precedes, for at most [`LOAD_BACK`] of the proxy's
//! own time (measured by the caller, `forward.rs`).

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

/// How long loading the scripts back may take before the proxy goes on without it.
const LOAD_BACK: Duration = Duration::from_millis(50);

const FLUSH: &[u8] = b"*2\r\n$6\r\nSCRIPT\r\n$5\r\nFLUSH\r\n";

/// The proxy's own connection to the node, opened on first use.
pub(super) struct SideConnection {
    target: SocketAddr,
    stream: Option<TcpStream>,
    /// A connect under way in the background (flushes never wait for it).
    opening: Option<oneshot::Receiver<io::Result<TcpStream>>>,
}

impl SideConnection {
    pub(super) fn new(target: SocketAddr) -> Self {
        Self {
            target,
            stream: None,
            opening: None,
        }
    }

    /// Writes `SCRIPT FLUSH` without waiting for anything: not for the
    /// connection (opened in the background; no flush until it is), not
    /// for buffer space, not for its `+OK` (drained on the next flush).
    /// The node reads it before the call the proxy forwards next almost
    /// always. True when it was written.
    pub(super) fn flush(&mut self) -> bool {
        if self.stream.is_none() {
            self.adopt_opened();
            return false;
        }
        let written = self.stream.as_ref().is_some_and(|stream| {
            drain(stream).is_ok() && stream.try_write(FLUSH).is_ok_and(|n| n == FLUSH.len())
        });
        if !written {
            // A partly written command would garble the next one.
            self.stream = None;
        }
        written
    }

    /// `SCRIPT LOAD` of each of `bodies`, waiting for every answer (at most
    /// [`LOAD_BACK`]), so the node has the scripts before the NOSCRIPT
    /// answer the caller holds back reaches its client. True when the
    /// scripts were loaded (false: nothing to load, or it failed).
    pub(super) async fn load_back(&mut self, bodies: &[Vec<u8>]) -> bool {
        if bodies.is_empty() {
            return false;
        }
        let loaded = tokio::time::timeout(LOAD_BACK, self.load(bodies)).await;
        if !matches!(loaded, Ok(Ok(()))) {
            self.stream = None;
        }
        matches!(loaded, Ok(Ok(())))
    }

    async fn load(&mut self, bodies: &[Vec<u8>]) -> io::Result<()> {
        let stream = match &mut self.stream {
            Some(stream) => stream,
            None => self.stream.insert(TcpStream::connect(self.target).await?),
        };
        let mut request = Vec::new();
        for body in bodies {
            request.extend_from_slice(
                format!("*3\r\n$6\r\nSCRIPT\r\n$4\r\nLOAD\r\n${}\r\n", body.len()).as_bytes(),
            );
            request.extend_from_slice(body);
            request.extend_from_slice(b"\r\n");
        }
        stream.write_all(&request).await?;
        // Each answer is a digest (`$40\r\n<sha1>\r\n`) or an error line:
        // one line ending per error, two per digest; a flush's `+OK` left
        // unread may come first.
        let mut answers = Vec::new();
        let mut chunk = [0_u8; 512];
        while answered(&answers) < bodies.len() {
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            answers.extend_from_slice(&chunk[..n]);
        }
        Ok(())
    }

    /// Takes the connection a background connect opened, or starts one.
    fn adopt_opened(&mut self) {
        let Some(mut opening) = self.opening.take() else {
            let (done, opening) = oneshot::channel();
            let target = self.target;
            tokio::spawn(async move {
                let _ = done.send(TcpStream::connect(target).await);
            });
            self.opening = Some(opening);
            return;
        };
        match opening.try_recv() {
            Ok(opened) => self.stream = opened.ok(),
            Err(oneshot::error::TryRecvError::Empty) => self.opening = Some(opening),
            Err(oneshot::error::TryRecvError::Closed) => {}
        }
    }
}

/// Reads and drops what the node answered to earlier flushes.
fn drain(stream: &TcpStream) -> io::Result<()> {
    let mut answers = [0_u8; 256];
    loop {
        match stream.try_read(&mut answers) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

/// The `SCRIPT LOAD` answers complete in `answers`: digests (`$` lines,
/// each with its line after it) and errors (`-` lines); `+OK` is a flush's.
fn answered(answers: &[u8]) -> usize {
    let lines: Vec<&[u8]> = answers.split(|&b| b == b'\n').collect();
    // The last piece has no line ending yet.
    let complete = &lines[..lines.len() - 1];
    let mut count = 0;
    let mut i = 0;
    while i < complete.len() {
        match complete[i].first() {
            Some(b'$') if i + 1 < complete.len() => {
                count += 1;
                i += 2;
            }
            Some(b'$') => break,
            Some(b'-') => {
                count += 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    count
}
