//! A web handler that takes a lock per request: one order per user at a
//! time, whatever the number of servers behind the load balancer.
//!
//! ```sh
//! eval "$(redquorum nodes up)"   # or any REDQUORUM_NODES
//! cargo run -p redquorum --example axum_handler
//! curl -X POST http://127.0.0.1:3000/orders/42
//! ```
//!
//! `ADDR` sets the listening address (default `127.0.0.1:3000`). A second
//! request for the same user while the first is in its critical section
//! gets `409 Conflict` at once (`try_lock`: one attempt, no waiting in a
//! request handler); nodes that cannot form a quorum give `503`.

use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::post;
use redquorum::{Error, Redlock};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // REDQUORUM_NODES and friends (RedlockConfig::from_env lists them).
    let redlock = Redlock::from_env()?;
    let app = Router::new()
        .route("/orders/{user}", post(order))
        .with_state(redlock.clone());
    let addr = std::env::var("ADDR").unwrap_or_else(|_| "127.0.0.1:3000".to_owned());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    // Release whatever a request still holds before the process exits.
    redlock.shutdown().await;
    Ok(())
}

/// `POST /orders/{user}`: the critical section runs under the user's lock.
async fn order(State(redlock): State<Redlock>, Path(user): Path<String>) -> (StatusCode, String) {
    let lock = match redlock.try_lock(&format!("orders:user-{user}")).await {
        Ok(lock) => lock,
        Err(Error::Contended { .. }) => {
            return (
                StatusCode::CONFLICT,
                format!("an order for user {user} is in progress\n"),
            );
        }
        Err(error) => return (StatusCode::SERVICE_UNAVAILABLE, format!("{error}\n")),
    };
    // The fencing token goes with every write, so a request that stalled
    // past its lease cannot overwrite a newer one (docs/fencing.md).
    let fence = match lock.fence().await {
        Ok(fence) => fence,
        Err(error) => return (StatusCode::SERVICE_UNAVAILABLE, format!("{error}\n")),
    };
    // ... check the user has no order yet, then write it with `fence` ...
    tokio::time::sleep(Duration::from_millis(50)).await;
    let placed_in_time = lock.is_valid();
    if let Err(error) = lock.release().await {
        // The keys expire with the TTL anyway; say so in the logs.
        eprintln!("release failed: {error}");
    }
    if placed_in_time {
        (
            StatusCode::OK,
            format!("order placed for user {user} (fence {fence})\n"),
        )
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "lease ran out\n".to_owned(),
        )
    }
}
