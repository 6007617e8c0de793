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
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};

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
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let thread = std::thread::Builder::new()
            .name(format!("fault-proxy-{port}"))
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = TcpListener::from_std(listener) else {
                        return;
                    };
                    tokio::select! {
                        () = accept_loop(listener, target, mode_rx, resets_rx) => {}
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
        })
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

async fn accept_loop(
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

/// Fault proxies in front of a cluster: one per node for each client group,
/// so a fault on a node hits every group, and a partition can cut one group
/// off from some nodes while the others still reach them.
///
/// # Examples
///
/// ```
/// # let cluster = redquorum_harness::Cluster::start(3).unwrap();
/// let proxies = redquorum_harness::Proxies::start_groups(&cluster, 2).unwrap();
/// assert_eq!(proxies.urls_for(1).len(), 3);
/// proxies.get(0).stall(); // node 0, every group
/// proxies.group(1, 2).set_mode(redquorum_harness::ProxyMode::Refuse); // node 2, group 1 only
/// proxies.heal_all();
/// ```
#[derive(Debug)]
pub struct Proxies {
    /// `groups[g][node]`.
    groups: Vec<Vec<FaultProxy>>,
}

/// One node's proxies, one per client group; a change applies to all of them.
///
/// # Examples
///
/// ```
/// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
/// # let proxies = redquorum_harness::Proxies::start(&cluster).unwrap();
/// proxies.get(0).set_latency(std::time::Duration::from_millis(5));
/// proxies.get(0).heal();
/// ```
#[derive(Debug, Clone, Copy)]
pub struct NodeProxies<'a> {
    proxies: &'a Proxies,
    node: usize,
}

impl NodeProxies<'_> {
    fn each(&self, f: impl Fn(&FaultProxy)) {
        for group in &self.proxies.groups {
            f(&group[self.node]);
        }
    }

    /// See [`FaultProxy::set_mode`].
    pub fn set_mode(&self, mode: ProxyMode) {
        self.each(|p| p.set_mode(mode));
    }

    /// See [`FaultProxy::set_latency`].
    pub fn set_latency(&self, delay: Duration) {
        self.each(|p| p.set_latency(delay));
    }

    /// See [`FaultProxy::stall`].
    pub fn stall(&self) {
        self.each(FaultProxy::stall);
    }

    /// See [`FaultProxy::heal`].
    pub fn heal(&self) {
        self.each(FaultProxy::heal);
    }

    /// See [`FaultProxy::reset`].
    pub fn reset(&self) {
        self.each(FaultProxy::reset);
    }

    /// The first group's proxy URL for this node.
    #[must_use]
    pub fn url(&self) -> String {
        self.proxies.groups[0][self.node].url()
    }

    /// The first group's current mode.
    #[must_use]
    pub fn mode(&self) -> ProxyMode {
        self.proxies.groups[0][self.node].mode()
    }
}

impl Proxies {
    /// Starts a proxy in front of every node of `cluster`, for one client group.
    ///
    /// # Errors
    ///
    /// See [`FaultProxy::start`].
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// let proxies = redquorum_harness::Proxies::start(&cluster).unwrap();
    /// assert_eq!(proxies.len(), 1);
    /// ```
    pub fn start(cluster: &crate::Cluster) -> io::Result<Self> {
        Self::start_groups(cluster, 1)
    }

    /// Starts a proxy in front of every node of `cluster` for each of `groups` client groups.
    ///
    /// # Errors
    ///
    /// See [`FaultProxy::start`].
    ///
    /// # Examples
    ///
    /// See [`Proxies`].
    pub fn start_groups(cluster: &crate::Cluster, groups: usize) -> io::Result<Self> {
        let groups = (0..groups.max(1))
            .map(|_| {
                (0..cluster.len())
                    .map(|i| FaultProxy::start(&cluster.host_port(i)))
                    .collect::<io::Result<Vec<_>>>()
            })
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Self { groups })
    }

    /// The first group's proxied URLs, to give to the client under test.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// # let proxies = redquorum_harness::Proxies::start(&cluster).unwrap();
    /// assert_eq!(proxies.urls()[0], proxies.get(0).url());
    /// ```
    #[must_use]
    pub fn urls(&self) -> Vec<String> {
        self.urls_for(0)
    }

    /// Client group `group`'s proxied URLs (the first group's if out of range).
    ///
    /// # Examples
    ///
    /// See [`Proxies`].
    #[must_use]
    pub fn urls_for(&self, group: usize) -> Vec<String> {
        self.groups
            .get(group)
            .unwrap_or(&self.groups[0])
            .iter()
            .map(FaultProxy::url)
            .collect()
    }

    /// Node `index`'s proxies, every group.
    ///
    /// # Panics
    ///
    /// If `index` is out of range (when used).
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// # let proxies = redquorum_harness::Proxies::start(&cluster).unwrap();
    /// proxies.get(0).reset();
    /// ```
    #[must_use]
    pub fn get(&self, index: usize) -> NodeProxies<'_> {
        NodeProxies {
            proxies: self,
            node: index,
        }
    }

    /// Client group `group`'s proxy to node `node`.
    ///
    /// # Panics
    ///
    /// If either is out of range.
    ///
    /// # Examples
    ///
    /// See [`Proxies`].
    #[must_use]
    pub fn group(&self, group: usize, node: usize) -> &FaultProxy {
        &self.groups[group][node]
    }

    /// The number of client groups.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// # let proxies = redquorum_harness::Proxies::start(&cluster).unwrap();
    /// assert_eq!(proxies.groups(), 1);
    /// ```
    #[must_use]
    pub fn groups(&self) -> usize {
        self.groups.len()
    }

    /// The number of nodes.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// # let proxies = redquorum_harness::Proxies::start(&cluster).unwrap();
    /// assert!(!proxies.is_empty());
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.groups[0].len()
    }

    /// True when there are no nodes.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// # let proxies = redquorum_harness::Proxies::start(&cluster).unwrap();
    /// assert!(!proxies.is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heals every proxy.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// # let proxies = redquorum_harness::Proxies::start(&cluster).unwrap();
    /// proxies.heal_all();
    /// ```
    pub fn heal_all(&self) {
        for proxy in self.groups.iter().flatten() {
            proxy.heal();
        }
    }
}
