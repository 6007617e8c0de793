//! `RespConn`: a minimal blocking RESP2 client, for readiness checks, test
//! assertions on raw keys, and fault commands (DEBUG SLEEP, CLIENT PAUSE).
//!
//! It is deliberately separate from fred so that checks do not share the
//! client under test.

use std::io::{self, BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A RESP2 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`
    Status(String),
    /// `-ERR ...`
    Error(String),
    /// `:42`
    Integer(i64),
    /// `$5 hello`, or `$-1` as `None`.
    Bulk(Option<Vec<u8>>),
    /// `*2 ...`, or `*-1` as `None`.
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// The reply as text, for bulk and status replies.
    ///
    /// # Examples
    ///
    /// ```
    /// use redquorum_harness::Reply;
    /// assert_eq!(Reply::Bulk(Some(b"abc".to_vec())).as_text().as_deref(), Some("abc"));
    /// assert_eq!(Reply::Bulk(None).as_text(), None);
    /// ```
    #[must_use]
    pub fn as_text(&self) -> Option<String> {
        match self {
            Reply::Status(s) => Some(s.clone()),
            Reply::Bulk(Some(b)) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        }
    }

    /// The reply as an integer, for integer replies.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum_harness::Reply::Integer(7).as_int(), Some(7));
    /// ```
    #[must_use]
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Reply::Integer(i) => Some(*i),
            _ => None,
        }
    }
}

/// One blocking connection to a node.
///
/// # Examples
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let cluster = redquorum_harness::Cluster::start(1)?;
/// let mut conn = redquorum_harness::RespConn::connect(cluster.port(0))?;
/// conn.command(&["SET", "k", "v"])?;
/// assert_eq!(conn.command(&["GET", "k"])?.as_text().as_deref(), Some("v"));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct RespConn {
    reader: BufReader<TcpStream>,
}

impl RespConn {
    /// Connects to `127.0.0.1:port` with 2 s read/write timeouts.
    ///
    /// # Errors
    ///
    /// The connect error.
    pub fn connect(port: u16) -> io::Result<Self> {
        Self::connect_addr(&format!("127.0.0.1:{port}"), Duration::from_secs(2))
    }

    /// Connects to `host:port` with the given I/O timeout.
    ///
    /// # Errors
    ///
    /// The connect error.
    pub fn connect_addr(addr: &str, timeout: Duration) -> io::Result<Self> {
        let addr = std::net::ToSocketAddrs::to_socket_addrs(addr)?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address"))?;
        let stream = TcpStream::connect_timeout(&addr, timeout)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        stream.set_nodelay(true)?;
        Ok(Self {
            reader: BufReader::new(stream),
        })
    }

    /// Sends one command and reads its reply. A server error is `Ok(Reply::Error)`.
    ///
    /// # Errors
    ///
    /// I/O errors and malformed replies.
    pub fn command(&mut self, args: &[&str]) -> io::Result<Reply> {
        self.send(args)?;
        self.read_reply()
    }

    /// Sends one command without reading its reply (see [`read`](Self::read)).
    ///
    /// # Errors
    ///
    /// I/O errors.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// let mut conn = redquorum_harness::RespConn::connect(cluster.port(0)).unwrap();
    /// conn.send(&["PING"]).unwrap();
    /// let reply = conn.read(std::time::Duration::from_secs(2)).unwrap();
    /// assert_eq!(reply.as_text().as_deref(), Some("PONG"));
    /// ```
    pub fn send(&mut self, args: &[&str]) -> io::Result<()> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for arg in args {
            out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            out.extend_from_slice(arg.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        self.reader.get_mut().write_all(&out)
    }

    /// Reads one reply, waiting at most `timeout` (then keeps that read timeout).
    ///
    /// # Errors
    ///
    /// I/O errors (a timeout included) and malformed replies.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// let mut conn = redquorum_harness::RespConn::connect(cluster.port(0)).unwrap();
    /// // nothing was sent: the read times out
    /// assert!(conn.read(std::time::Duration::from_millis(50)).is_err());
    /// ```
    pub fn read(&mut self, timeout: Duration) -> io::Result<Reply> {
        self.reader.get_ref().set_read_timeout(Some(timeout))?;
        self.read_reply()
    }

    fn read_line(&mut self) -> io::Result<String> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed",
            ));
        }
        Ok(line.trim_end_matches("\r\n").to_owned())
    }

    fn read_reply(&mut self) -> io::Result<Reply> {
        let line = self.read_line()?;
        let (kind, rest) = line.split_at(1.min(line.len()));
        let number = || {
            rest.parse::<i64>().map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidData, format!("bad length {rest:?}"))
            })
        };
        match kind {
            "+" => Ok(Reply::Status(rest.to_owned())),
            "-" => Ok(Reply::Error(rest.to_owned())),
            ":" => Ok(Reply::Integer(number()?)),
            "$" => {
                let len = number()?;
                if len < 0 {
                    return Ok(Reply::Bulk(None));
                }
                let mut buf = vec![0; len as usize + 2];
                io::Read::read_exact(&mut self.reader, &mut buf)?;
                buf.truncate(len as usize);
                Ok(Reply::Bulk(Some(buf)))
            }
            "*" => {
                let len = number()?;
                if len < 0 {
                    return Ok(Reply::Array(None));
                }
                let items = (0..len)
                    .map(|_| self.read_reply())
                    .collect::<io::Result<Vec<_>>>()?;
                Ok(Reply::Array(Some(items)))
            }
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("bad reply {line:?}"),
            )),
        }
    }
}
