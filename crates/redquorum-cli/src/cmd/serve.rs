//! `redquorum serve`: the locks over HTTP, for programs in any language.
//! Stateless: a held lock is its lease ticket, which the client keeps and
//! sends back to extend or release it, so any number of replicas can serve
//! the same masters and exclude each other. Bearer tokens are required
//! (`auth.rs`); every answer is JSON, errors included (`problem.rs`); the
//! lock routes are in `locks.rs` (read-write locks' in `rwlocks.rs`), their inputs' checks in `input.rs`, node
//! health in `health.rs`, leader election in `elections.rs`, semaphores in
//! `semaphores.rs`, metrics in
//! `metrics_route.rs`; `GET /v1/openapi.json` serves `openapi.json`, the
//! routes as an OpenAPI document. The one state
//! a replica keeps is its sessions (`sessions.rs`, routes in
//! `session_routes.rs`): dead-man switches that keep a client's locks,
//! leaderships and permits (`kept.rs`) while its keepalives arrive
//! HTTPS where asked is in `tls.rs` (docs/serve.md).

mod auth;
mod elections;
mod health;
mod input;
mod kept;
mod locks;
mod metrics_route;
mod problem;
mod rwlocks;
mod semaphores;
mod session_routes;
mod sessions;
mod tls;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{delete, get, post};
use axum::serve::ListenerExt;
use redquorum::Redlock;
use tokio::signal::unix::{SignalKind, signal};

use crate::arg_values;
use crate::cmd::common;
use crate::exit;
use crate::nodes_arg::NodesArg;

/// Options of `redquorum serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on (port 0: any free port; the address taken is
    /// printed on stdout).
    #[arg(long, default_value = "127.0.0.1:7480")]
    listen: SocketAddr,
    /// File of bearer tokens, one per line (blank lines and lines starting
    /// with # are skipped). REDQUORUM_SERVE_TOKEN adds one more.
    #[arg(long, value_name = "FILE")]
    tokens_file: Option<PathBuf>,
    /// Serve HTTPS with this PEM certificate chain (with --tls-key).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Serve without tokens: only on a loopback address.
    #[arg(long)]
    allow_unauthenticated_loopback: bool,
    /// The longest TTL a client may ask for.
    #[arg(long, default_value = "1h", value_parser = arg_values::positive_duration)]
    max_ttl: Duration,
    /// The longest a client may ask to wait for a lock.
    #[arg(long, default_value = "60s", value_parser = arg_values::duration)]
    max_wait: Duration,
    /// Waits for a lock under way at once per token; more are refused (429).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    max_waits: u32,
    /// Also stop when stdin ends: for a parent that starts the service
    /// with a pipe and may die without stopping it (the torture's serve
    /// holders).
    #[arg(long, hide = true)]
    stop_on_stdin_end: bool,
    #[command(flatten)]
    nodes: common::AdminArgs,
}

/// What every route shares.
#[derive(Debug)]
pub(crate) struct Service {
    redlock: Redlock,
    limits: input::Limits,
    waits: Arc<auth::Waits>,
    sessions: Arc<sessions::Sessions>,
    metrics: metrics_exporter_prometheus::PrometheusHandle,
}

impl Service {
    /// `once` when `wait` is zero; else `waiting`, counted among the
    /// client's waits under way (429 past `--max-waits`). Errors as
    /// [`Problem::of`](problem::Problem::of) answers them.
    async fn once_or_waiting<T>(
        &self,
        client: auth::Client,
        wait: Duration,
        once: impl Future<Output = Result<T, redquorum::Error>>,
        waiting: impl Future<Output = Result<T, redquorum::Error>>,
    ) -> Result<T, problem::Problem> {
        let answer = if wait.is_zero() {
            once.await
        } else {
            let _slot = (self.waits.start(client)).ok_or_else(problem::Problem::too_many_waits)?;
            waiting.await
        };
        answer.map_err(|e| problem::Problem::of(&e))
    }
}

/// `redquorum serve`: answers until SIGINT or SIGTERM; 64 for bad options
/// or no tokens, 69 when the address cannot be bound.
pub(crate) async fn serve(nodes: &NodesArg, args: ServeArgs) -> ExitCode {
    let tokens = match auth::Tokens::load(args.tokens_file.as_deref()) {
        Ok(tokens) => tokens,
        Err(message) => {
            stderr_line!("redquorum serve: {message}");
            return exit::USAGE.into();
        }
    };
    if args.allow_unauthenticated_loopback && !args.listen.ip().is_loopback() {
        stderr_line!(
            "redquorum serve: --allow-unauthenticated-loopback needs a loopback --listen address, not {}",
            args.listen.ip()
        );
        return exit::USAGE.into();
    }
    if tokens.is_empty() && !args.allow_unauthenticated_loopback {
        stderr_line!(
            "redquorum serve: no bearer tokens: give --tokens-file or REDQUORUM_SERVE_TOKEN \
             (or --allow-unauthenticated-loopback on a loopback address)"
        );
        return exit::USAGE.into();
    }
    // Before the lock is built, which describes its metrics.
    let metrics = match metrics_route::install() {
        Ok(handle) => handle,
        Err(e) => {
            stderr_line!("redquorum serve: cannot install the metrics recorder: {e}");
            return exit::SOFTWARE.into();
        }
    };
    let redlock = match common::admin_redlock(nodes, "serve", &args.nodes, None) {
        Ok(redlock) => redlock,
        Err(code) => return code,
    };
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => match tls::acceptor(cert, key) {
            Ok(acceptor) => Some(acceptor),
            Err(message) => {
                stderr_line!("redquorum serve: {message}");
                return exit::USAGE.into();
            }
        },
        _ => None,
    };
    let listener = match tokio::net::TcpListener::bind(args.listen).await {
        Ok(listener) => listener,
        Err(e) => {
            stderr_line!("redquorum serve: cannot listen on {}: {e}", args.listen);
            return exit::UNAVAILABLE.into();
        }
    };
    let service = Arc::new(Service {
        redlock: redlock.clone(),
        limits: input::Limits {
            max_ttl: args.max_ttl,
            max_wait: args.max_wait,
        },
        waits: Arc::new(auth::Waits::new(args.max_waits)),
        sessions: Arc::default(),
        metrics,
    });
    let sessions = Arc::clone(&service.sessions);
    let app = router(service, Arc::new(tokens));
    let bound = listener.local_addr().unwrap_or(args.listen);
    let scheme = if tls.is_some() { "https" } else { "http" };
    // Machine-readable for whoever started it (port 0 picks one).
    if let Err(code) = common::print_line("serve", &format!("{scheme}://{bound}")) {
        return code;
    }
    stderr_line!("redquorum serve: listening on {scheme}://{bound} (docs/serve.md)");
    let stop = stop_signal(args.stop_on_stdin_end);
    let served = match tls {
        Some(acceptor) => match tls::TlsListener::new(listener, acceptor) {
            Ok(listener) => {
                axum::serve(listener, app)
                    .with_graceful_shutdown(stop)
                    .await
            }
            Err(e) => Err(e),
        },
        // Small answers: sent at once, not held for the previous one's ACK.
        None => {
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            axum::serve(listener, app)
                .with_graceful_shutdown(stop)
                .await
        }
    };
    // Their clients may still use them: they expire, unextended.
    sessions.forget_all();
    redlock.shutdown().await;
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            stderr_line!("redquorum serve: {e}");
            exit::SOFTWARE.into()
        }
    }
}

/// Every route, behind the token check, bodies bounded.
fn router(service: Arc<Service>, tokens: Arc<auth::Tokens>) -> Router {
    Router::new()
        .route("/v1/locks/{name}", post(locks::lock).get(locks::inspect))
        .route("/v1/locks/{name}/extend", post(locks::extend))
        .route("/v1/locks/{name}/release", post(locks::release))
        .route("/v1/rwlocks/{name}/write", post(rwlocks::write))
        .route("/v1/rwlocks/{name}/read", post(rwlocks::read))
        .route(
            "/v1/rwlocks/{name}/read/release",
            post(rwlocks::release_read),
        )
        .route("/v1/elections/{name}", get(elections::leader))
        .route("/v1/elections/{name}/campaign", post(elections::campaign))
        .route("/v1/elections/{name}/resign", post(elections::resign))
        .route("/v1/elections/{name}/watch", get(elections::watch))
        .route(
            "/v1/elections/{name}/leader-elector",
            get(elections::leader_elector),
        )
        .route("/v1/semaphores/{name}/acquire", post(semaphores::acquire))
        .route("/v1/semaphores/{name}/release", post(semaphores::release))
        .route("/v1/sessions", post(session_routes::create))
        .route("/v1/sessions/{id}", delete(session_routes::delete))
        .route(
            "/v1/sessions/{id}/keepalive",
            post(session_routes::keepalive),
        )
        .route("/healthz", get(health::healthz))
        .route("/metrics", get(metrics_route::metrics))
        .route("/v1/openapi.json", get(openapi))
        .fallback(problem::not_found)
        .layer(axum::middleware::from_fn_with_state(tokens, auth::require))
        .layer(axum::middleware::from_fn(metrics_route::count))
        .layer(DefaultBodyLimit::max(input::MAX_BODY))
        .with_state(service)
}

/// The routes described as an OpenAPI 3.1 document (`serve/openapi.json`).
async fn openapi() -> impl axum::response::IntoResponse {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        include_str!("serve/openapi.json"),
    )
}

/// Resolves on the first SIGINT or SIGTERM (never, if they cannot be
/// handled: the process is then stopped the default way), or when stdin
/// ends if `stdin_end` says so.
async fn stop_signal(stdin_end: bool) {
    let signals = async {
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(mut interrupt), Ok(mut terminate)) => {
                tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = terminate.recv() => {}
                }
            }
            _ => std::future::pending().await,
        }
    };
    let stdin_ended = async {
        if !stdin_end {
            return std::future::pending().await;
        }
        // A thread of its own: a read of stdin on the runtime would hold up
        // its shutdown until stdin ends.
        let (ended, on_end) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            let _ = ended.send(());
        });
        let _ = on_end.await;
    };
    tokio::select! {
        () = signals => {}
        () = stdin_ended => {}
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    /// Every route the router serves is in the OpenAPI document, and every
    /// path the document names is served.
    #[test]
    fn the_openapi_document_names_every_route_and_no_other() {
        // The router's source, up to these tests.
        let (source, _) = include_str!("serve.rs")
            .split_once("#[cfg(test)]")
            .expect("tests");
        let routed: BTreeSet<&str> = (source.split(".route(").skip(1))
            .filter_map(|rest| rest.trim_start().strip_prefix('"')?.split('"').next())
            .collect();
        let document: serde_json::Value =
            serde_json::from_str(include_str!("serve/openapi.json")).expect("valid JSON");
        let documented: BTreeSet<&str> = (document["paths"].as_object().expect("paths"))
            .keys()
            .map(String::as_str)
            .collect();
        assert!(routed.len() > 10, "{routed:?}");
        assert_eq!(routed, documented);
    }
}
