//! `FaultProxy`: a TCP proxy in front of one node whose behaviour the test
//! controls: added latency, a stall that holds bytes until healed, a reset of
//! every open connection, and refusing connections.
//!
//! The kernel's netem is not available on every machine (and Toxiproxy-style
//! proxies do not always apply a change to connections that are already open,
//! which Redis clients keep), so the proxy is plain tokio code: each change is
//! seen by every open connection on its next chunk.

use std::io;
use std::net::{SocketAddr, TcpListener as StdListener, ToSocketAddrs};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};

use super::forward::{ProxyMode, accept_loop};
use super::script_tally::{ScriptCounts, ScriptTally};
use crate::lag_meter;

/// A fault proxy for one node, listening on a free loopback port.
///
/// It runs on its own thread and runtime, so it works from sync and async
/// tests alike and keeps forwarding while a test's runtime is blocked. Drop
/// stops it and closes every connection.
///
/// # Examples
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use redquorum_harness::{Cluster, FaultProxy, RespConn};
///
/// let cluster = Cluster::start(1)?;
/// let proxy = FaultProxy::start(&format!("127.0.0.1:{}", cluster.port(0)))?;
/// let mut conn = RespConn::connect(proxy.port())?;
/// assert_eq!(conn.command(&["PING"])?.as_text().as_deref(), Some("PONG"));
/// proxy.reset(); // the open connection is reset
/// assert!(conn.command(&["PING"]).is_err());
/// proxy.set_latency(Duration::from_millis(20));
/// let mut conn = RespConn::connect(proxy.port())?;
/// assert!(conn.command(&["PING"]).is_ok());
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct FaultProxy {
    port: u16,
    target: SocketAddr,
    mode: watch::Sender<ProxyMode>,
    resets: watch::Sender<u64>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    tally: Arc<ScriptTally>,
    /// Each time its thread woke late: when, and how late.
    lags: Arc<Mutex<Vec<(Instant, Duration)>>>,
}

impl FaultProxy {
    /// Starts a proxy to `target` (`host:port`) on a free port of 127.0.0.1.
    ///
    /// # Errors
    ///
    /// An unresolvable target, or no port / runtime / thread available.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// let proxy = redquorum_harness::FaultProxy::start(&format!("127.0.0.1:{}", cluster.port(0))).unwrap();
    /// assert!(proxy.url().starts_with("redis://127.0.0.1:"));
    /// ```
    pub fn start(target: &str) -> io::Result<Self> {
        let target = target
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address"))?;
        let listener = StdListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let (mode, mode_rx) = watch::channel(ProxyMode::Pass);
        let (resets, resets_rx) = watch::channel(0_u64);
        let (shutdown, shutdown_rx) = oneshot::channel();
        let tally = Arc::new(ScriptTally::default());
        let counted = tally.clone();
        let lags = Arc::new(Mutex::new(Vec::new()));
        let metered = lags.clone();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let thread = std::thread::Builder::new()
            .name(format!("fault-proxy-{port}"))
            .spawn(move || {
                runtime.block_on(async move {
                    // What a loaded machine costs everything passing through.
                    tokio::spawn(lag_meter::meter(None, move |woke, late| {
                        (metered.lock().unwrap_or_else(PoisonError::into_inner)).push((woke, late));
                    }));
                    let Ok(listener) = TcpListener::from_std(listener) else {
                        return;
                    };
                    tokio::select! {
                        () = accept_loop(listener, target, mode_rx, resets_rx, counted) => {}
                        _ = shutdown_rx => {}
                    }
                });
                // Dropping the runtime here drops every connection task and its sockets.
            })?;
        Ok(Self {
            port,
            target,
            mode,
            resets,
            shutdown: Some(shutdown),
            thread: Some(thread),
            tally,
            lags,
        })
    }

    /// Each time the proxy's thread woke at least
    /// [`LAG_RECORDED`](crate::LAG_RECORDED) late (a loaded machine kept it
    /// from the CPU, and every byte through it waited): when it woke, and
    /// how late.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// let proxy = redquorum_harness::FaultProxy::start(&format!("127.0.0.1:{}", cluster.port(0))).unwrap();
    /// for (_woke, late) in proxy.lags() {
    ///     assert!(late >= redquorum_harness::LAG_RECORDED);
    /// }
    /// ```
    #[must_use]
    pub fn lags(&self) -> Vec<(Instant, Duration)> {
        (self.lags.lock().unwrap_or_else(PoisonError::into_inner)).clone()
    }

    /// What went through the proxy of scripts and NOSCRIPT so far.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// let proxy = redquorum_harness::FaultProxy::start(&format!("127.0.0.1:{}", cluster.port(0))).unwrap();
    /// assert_eq!(proxy.script_counts(), redquorum_harness::ScriptCounts::default());
    /// ```
    #[must_use]
    pub fn script_counts(&self) -> ScriptCounts {
        self.tally.counts()
    }

    /// The longest this proxy held an answer back (in
    /// [`ProxyMode::FlushScripts`], loading the scripts back) since the last
    /// call, once no hold is under way: waits up to `within` for one to
    /// end, and says `None` if one still has not.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// let proxy = redquorum_harness::FaultProxy::start(&format!("127.0.0.1:{}", cluster.port(0))).unwrap();
    /// let within = std::time::Duration::from_secs(1);
    /// assert_eq!(proxy.take_longest_hold(within), Some(std::time::Duration::ZERO));
    /// ```
    #[must_use]
    pub fn take_longest_hold(&self, within: Duration) -> Option<Duration> {
        self.tally.take_hold(within)
    }

    /// The port clients should connect to.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// # let proxy = redquorum_harness::FaultProxy::start(&format!("127.0.0.1:{}", cluster.port(0))).unwrap();
    /// assert_ne!(proxy.port(), cluster.port(0));
    /// ```
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:PORT` of the proxy.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// # let proxy = redquorum_harness::FaultProxy::start(&format!("127.0.0.1:{}", cluster.port(0))).unwrap();
    /// assert_eq!(proxy.url(), format!("redis://127.0.0.1:{}", proxy.port()));
    /// ```
    #[must_use]
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The node behind the proxy.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// # let proxy = redquorum_harness::FaultProxy::start(&format!("127.0.0.1:{}", cluster.port(0))).unwrap();
    /// assert_eq!(proxy.target().port(), cluster.port(0));
    /// ```
    #[must_use]
    pub fn target(&self) -> SocketAddr {
        self.target
    }

    /// The current mode.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// # let proxy = redquorum_harness::FaultProxy::start(&format!("127.0.0.1:{}", cluster.port(0))).unwrap();
    /// assert_eq!(proxy.mode(), redquorum_harness::ProxyMode::Pass);
    /// ```
    #[must_use]
    pub fn mode(&self) -> ProxyMode {
        *self.mode.borrow()
    }

    /// Sets the mode; entering [`ProxyMode::Refuse`] also resets open connections.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// # let proxy = redquorum_harness::FaultProxy::start(&format!("127.0.0.1:{}", cluster.port(0))).unwrap();
    /// use redquorum_harness::ProxyMode;
    /// proxy.set_mode(ProxyMode::Refuse);
    /// let refused = redquorum_harness::RespConn::connect(proxy.port())
    ///     .and_then(|mut c| c.command(&["PING"]));
    /// assert!(refused.is_err());
    /// ```
    pub fn set_mode(&self, mode: ProxyMode) {
        self.mode.send_replace(mode);
        if mode == ProxyMode::Refuse {
            self.reset();
        }
    }

    /// Adds `delay` to every chunk, each way.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// # let proxy = redquorum_harness::FaultProxy::start(&format!("127.0.0.1:{}", cluster.port(0))).unwrap();
    /// proxy.set_latency(std::time::Duration::from_millis(5));
    /// ```
    pub fn set_latency(&self, delay: Duration) {
        self.set_mode(ProxyMode::Latency(delay));
    }

    /// Holds every byte until [`heal`](Self::heal); held bytes are delivered then.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// # let proxy = redquorum_harness::FaultProxy::start(&format!("127.0.0.1:{}", cluster.port(0))).unwrap();
    /// proxy.stall();
    /// proxy.heal();
    /// ```
    pub fn stall(&self) {
        self.set_mode(ProxyMode::Stall);
    }

    /// Back to [`ProxyMode::Pass`].
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// # let proxy = redquorum_harness::FaultProxy::start(&format!("127.0.0.1:{}", cluster.port(0))).unwrap();
    /// proxy.heal();
    /// assert_eq!(proxy.mode(), redquorum_harness::ProxyMode::Pass);
    /// ```
    pub fn heal(&self) {
        self.set_mode(ProxyMode::Pass);
    }

    /// Resets every open connection (RST: `SO_LINGER` 0), both sides; new ones are accepted.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// # let proxy = redquorum_harness::FaultProxy::start(&format!("127.0.0.1:{}", cluster.port(0))).unwrap();
    /// proxy.reset();
    /// ```
    pub fn reset(&self) {
        self.resets.send_modify(|generation| *generation += 1);
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
