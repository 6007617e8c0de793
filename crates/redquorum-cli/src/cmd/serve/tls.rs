//! HTTPS for `redquorum serve --tls-cert FILE --tls-key FILE`. A task of
//! its own accepts connections and runs each TLS handshake apart, bounded
//! in time, so a slow or silent client holds up no other; the service is
//! handed only finished handshakes.

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::server::TlsStream;

/// The longest a client may take to finish its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Handshaken connections waiting for the service to take them.
const WAITING: usize = 64;

/// The acceptor for a PEM certificate chain and its PEM private key; the
/// error names the file and what is wrong with it.
pub(crate) fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, String> {
    let certs = (CertificateDer::pem_file_iter(cert))
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(|e| format!("--tls-cert {}: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "--tls-cert {}: no certificate in it",
            cert.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("--tls-key {}: {e}", key.display()))?;
    // ring, the provider the node connections use (one provider per process).
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = (rustls::ServerConfig::builder_with_provider(provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("--tls-cert, --tls-key: {e}"))?;
    // The service speaks HTTP/1.1 only.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Connections on `listener` once their TLS handshake is done.
#[derive(Debug)]
pub(crate) struct TlsListener {
    handshaken: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
    accepting: tokio::task::AbortHandle,
}

impl TlsListener {
    pub(crate) fn new(listener: TcpListener, acceptor: TlsAcceptor) -> io::Result<Self> {
        let local = listener.local_addr()?;
        let (handed, handshaken) = mpsc::channel(WAITING);
        let accepting = tokio::spawn(accept_all(listener, acceptor, handed)).abort_handle();
        Ok(Self {
            handshaken,
            local,
            accepting,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.handshaken.recv().await {
            Some(connection) => connection,
            // The accepting task ended (it never does but when aborted).
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local)
    }
}

async fn accept_all(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    handed: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            // Out of descriptors, say: wait for some to close, as axum's
            // own listener does.
            Err(_) => {
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let (acceptor, handed) = (acceptor.clone(), handed.clone());
        tokio::spawn(async move {
            // A failed or too slow handshake only drops its connection.
            if let Ok(Ok(tls)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await
            {
                let _ = handed.send((tls, peer)).await;
            }
        });
    }
}
