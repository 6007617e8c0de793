//! `TlsCluster`: local `redis-server` nodes that speak TLS, with certificates generated at start.
//!
//! Each node listens on two loopback ports: a TLS port, which the code under
//! test uses (`rediss://`), and a plain port, which the harness itself uses to
//! set up ACL users and read keys (its tiny RESP client has no TLS). The
//! server certificates are signed by a private CA created for this cluster
//! only, so a client must be given [`TlsCluster::ca_pem`] to trust them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};

use super::resp::{Reply, RespConn};
use super::server::started::{self, NodesDir};
use super::server::{free_port, redis_server_path, run_command, wait_pong};
use crate::error::HarnessError;

/// One TLS node's process and ports.
#[derive(Debug)]
struct TlsNode {
    plain_port: u16,
    tls_port: u16,
    child: Child,
}

/// N local `redis-server` processes with TLS on, signed by a throwaway private CA.
///
/// Processes are killed when the cluster is dropped.
///
/// # Examples
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let cluster = redquorum_harness::TlsCluster::start(1)?;
/// assert!(cluster.url(0).starts_with("rediss://127.0.0.1:"));
/// assert!(cluster.ca_pem().starts_with("-----BEGIN CERTIFICATE-----"));
/// // the harness's own checks go over the plain port
/// assert_eq!(cluster.command(0, &["PING"])?.as_text().as_deref(), Some("PONG"));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct TlsCluster {
    nodes: Vec<TlsNode>,
    ca_pem: String,
    _root: NodesDir,
}

impl TlsCluster {
    /// Generates a CA and a server certificate (for `localhost` and `127.0.0.1`),
    /// then starts `n` TLS-enabled nodes that do not require client certificates.
    ///
    /// # Errors
    ///
    /// `redis-server` missing, certificate generation or file errors, or a node
    /// that does not start (a `redis-server` built without TLS exits at once).
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::TlsCluster::start(3).unwrap();
    /// assert_eq!(cluster.len(), 3);
    /// ```
    pub fn start(n: usize) -> Result<Self, HarnessError> {
        let binary = redis_server_path()?;
        let root = tempfile::Builder::new()
            .prefix("redquorum-tls-")
            .tempdir()
            .map_err(|source| io(0, "create temp dir", source))?;
        let root = NodesDir::new(root);
        let ca_pem = write_certificates(root.path())?;
        let mut nodes = Vec::with_capacity(n);
        for index in 0..n {
            nodes.push(start_node(&binary, root.path(), index)?);
        }
        Ok(Self {
            nodes,
            ca_pem,
            _root: root,
        })
    }

    /// The number of nodes.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum_harness::TlsCluster::start(1).unwrap().len(), 1);
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True for a cluster of no nodes.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!redquorum_harness::TlsCluster::start(1).unwrap().is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Node `index`'s TLS URL, `rediss://127.0.0.1:PORT`.
    ///
    /// # Panics
    ///
    /// If `index` is out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::TlsCluster::start(1).unwrap();
    /// assert_eq!(cluster.url(0), format!("rediss://127.0.0.1:{}", cluster.tls_port(0)));
    /// ```
    #[must_use]
    pub fn url(&self, index: usize) -> String {
        format!("rediss://127.0.0.1:{}", self.nodes[index].tls_port)
    }

    /// Every node's TLS URL.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::TlsCluster::start(3).unwrap();
    /// assert_eq!(cluster.urls().len(), 3);
    /// ```
    #[must_use]
    pub fn urls(&self) -> Vec<String> {
        (0..self.len()).map(|i| self.url(i)).collect()
    }

    /// Every node's TLS URL with ACL credentials: `rediss://user:password@127.0.0.1:PORT`.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::TlsCluster::start(1).unwrap();
    /// assert!(cluster.urls_as("locker", "pw")[0].starts_with("rediss://locker:pw@"));
    /// ```
    #[must_use]
    pub fn urls_as(&self, user: &str, password: &str) -> Vec<String> {
        self.nodes
            .iter()
            .map(|node| format!("rediss://{user}:{password}@127.0.0.1:{}", node.tls_port))
            .collect()
    }

    /// Node `index`'s TLS port.
    ///
    /// # Panics
    ///
    /// If `index` is out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::TlsCluster::start(1).unwrap();
    /// assert_ne!(cluster.tls_port(0), cluster.plain_port(0));
    /// ```
    #[must_use]
    pub fn tls_port(&self, index: usize) -> u16 {
        self.nodes[index].tls_port
    }

    /// Node `index`'s plain-text port (loopback only), used by the harness itself.
    ///
    /// # Panics
    ///
    /// If `index` is out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::TlsCluster::start(1).unwrap();
    /// assert!(cluster.plain_port(0) > 0);
    /// ```
    #[must_use]
    pub fn plain_port(&self, index: usize) -> u16 {
        self.nodes[index].plain_port
    }

    /// The private CA's certificate (PEM), to give the client as its trust root.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::TlsCluster::start(1).unwrap();
    /// assert!(cluster.ca_pem().contains("CERTIFICATE"));
    /// ```
    #[must_use]
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// Runs one command on node `index` over its plain port, as the default user.
    ///
    /// # Errors
    ///
    /// Connection or I/O failure, or [`HarnessError::Command`] for a server error reply.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::TlsCluster::start(1).unwrap();
    /// cluster.command(0, &["SET", "k", "1"]).unwrap();
    /// assert_eq!(cluster.command(0, &["GET", "k"]).unwrap().as_text().as_deref(), Some("1"));
    /// ```
    pub fn command(&self, index: usize, args: &[&str]) -> Result<Reply, HarnessError> {
        let node = self
            .nodes
            .get(index)
            .ok_or(HarnessError::NoSuchNode(index))?;
        let conn =
            RespConn::connect(node.plain_port).map_err(|source| io(index, "connect", source))?;
        run_command(index, conn, args)
    }
}

impl Drop for TlsCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            started::kill(&mut node.child);
            let _ = node.child.wait();
        }
    }
}

/// A PEM certificate of a CA that signed nothing in any [`TlsCluster`]: a client
/// trusting only it must refuse the cluster's nodes.
///
/// # Errors
///
/// Certificate generation failure.
///
/// # Examples
///
/// ```
/// let pem = redquorum_harness::unrelated_ca_pem().unwrap();
/// assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"));
/// ```
pub fn unrelated_ca_pem() -> Result<String, HarnessError> {
    let (params, key) = ca_params()?;
    let cert = params
        .self_signed(&key)
        .map_err(|e| cert_error("sign the unrelated CA", e))?;
    Ok(cert.pem())
}

fn ca_params() -> Result<(CertificateParams, KeyPair), HarnessError> {
    let key = KeyPair::generate().map_err(|e| cert_error("generate the CA key", e))?;
    let mut params =
        CertificateParams::new(Vec::<String>::new()).map_err(|e| cert_error("CA params", e))?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, "redquorum test CA");
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    Ok((params, key))
}

/// Writes `ca.pem`, `server.pem` and `server.key` into `dir`; returns the CA's PEM.
fn write_certificates(dir: &Path) -> Result<String, HarnessError> {
    let (ca_params, ca_key) = ca_params()?;
    let ca_cert = ca_params
        .self_signed(&ca_key)
        .map_err(|e| cert_error("sign the CA", e))?;
    let issuer = Issuer::from_params(&ca_params, &ca_key);
    // "127.0.0.1" becomes an IP-address SAN, which is what the client checks
    // when it connects to rediss://127.0.0.1:PORT.
    let server_params =
        CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .map_err(|e| cert_error("server params", e))?;
    let server_key = KeyPair::generate().map_err(|e| cert_error("generate the server key", e))?;
    let server_cert = server_params
        .signed_by(&server_key, &issuer)
        .map_err(|e| cert_error("sign the server certificate", e))?;
    let write = |name: &str, contents: &str| {
        std::fs::write(dir.join(name), contents)
            .map_err(|source| io(0, "write a certificate file", source))
    };
    write("ca.pem", &ca_cert.pem())?;
    write("server.pem", &server_cert.pem())?;
    write("server.key", &server_key.serialize_pem())?;
    Ok(ca_cert.pem())
}

fn start_node(binary: &Path, root: &Path, index: usize) -> Result<TlsNode, HarnessError> {
    let dir = root.join(format!("node{index}"));
    std::fs::create_dir_all(&dir).map_err(|source| io(index, "create node dir", source))?;
    // A free port can be taken between probing and binding: try a few times.
    let mut last = None;
    for _attempt in 0..5 {
        let plain_port = free_port().map_err(|source| io(index, "find a free port", source))?;
        let tls_port = free_port().map_err(|source| io(index, "find a free port", source))?;
        let child = started::spawn(&mut tls_command(binary, root, &dir, plain_port, tls_port))
            .map_err(|source| io(index, "spawn redis-server", source))?;
        let mut node = TlsNode {
            plain_port,
            tls_port,
            child,
        };
        match wait_ready(&mut node, index, &dir) {
            Ok(()) => return Ok(node),
            Err(e) => {
                started::kill(&mut node.child);
                let _ = node.child.wait();
                last = Some(e);
            }
        }
    }
    Err(last.unwrap_or(HarnessError::NoSuchNode(index)))
}

fn tls_command(binary: &Path, root: &Path, dir: &Path, plain_port: u16, tls_port: u16) -> Command {
    let file = |name: &str| -> PathBuf { root.join(name) };
    let mut command = Command::new(binary);
    command
        .arg("--port")
        .arg(plain_port.to_string())
        .arg("--tls-port")
        .arg(tls_port.to_string())
        .arg("--tls-cert-file")
        .arg(file("server.pem"))
        .arg("--tls-key-file")
        .arg(file("server.key"))
        .arg("--tls-ca-cert-file")
        .arg(file("ca.pem"))
        .args(["--tls-auth-clients", "no"])
        .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .args(["--daemonize", "no", "--protected-mode", "no"])
        .arg("--dir")
        .arg(dir)
        .args(["--logfile", "redis.log"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

fn wait_ready(node: &mut TlsNode, index: usize, dir: &Path) -> Result<(), HarnessError> {
    let plain_port = node.plain_port;
    let pid = node.child.id();
    if wait_pong(plain_port, pid, || {
        matches!(started::try_wait(&mut node.child), Ok(None))
    }) {
        Ok(())
    } else {
        Err(HarnessError::NotReady {
            node: index,
            port: node.tls_port,
            log_tail: crate::error::log_tail(&dir.join("redis.log")),
        })
    }
}

fn io(node: usize, action: &'static str, source: std::io::Error) -> HarnessError {
    HarnessError::Io {
        node,
        action,
        source,
    }
}

fn cert_error(action: &'static str, error: rcgen::Error) -> HarnessError {
    io(0, action, std::io::Error::other(error))
}
