//! Every error the service answers, as JSON: `{"error": code, "message":
//! text}` with the HTTP status that says what happened; a lock operation's
//! error ([`redquorum::Error`]) keeps the library's message, which names
//! the nodes and their causes.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use redquorum::Error;
use serde::Serialize;

/// An error answer.
#[derive(Debug)]
pub(crate) struct Problem {
    status: StatusCode,
    body: ProblemBody,
}

#[derive(Debug, Serialize)]
struct ProblemBody {
    error: &'static str,
    message: String,
}

impl Problem {
    pub(crate) fn new(status: StatusCode, error: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            body: ProblemBody {
                error,
                message: message.into(),
            },
        }
    }

    /// A request the service will not run (400).
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// 429: the client has `--max-waits` waits (or watches) under way.
    pub(crate) fn too_many_waits() -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_waits",
            "this client has as many waits under way as the service allows (--max-waits)",
        )
    }

    /// What a lock operation's error means to the client: 409 still taken,
    /// 410 the lease's hold is gone (nothing was changed), 503 no quorum
    /// answered, 400 a request the lock refused, 500 anything else.
    pub(crate) fn of(error: &Error) -> Self {
        let (status, code) = match error {
            Error::Contended { .. } | Error::WaitTimeout { .. } => {
                (StatusCode::CONFLICT, "contended")
            }
            Error::NotHeld { .. } | Error::Lost { .. } => (StatusCode::GONE, "gone"),
            Error::Unavailable { .. } | Error::Expired { .. } | Error::FenceUnavailable { .. } => {
                (StatusCode::SERVICE_UNAVAILABLE, "unavailable")
            }
            Error::EmptyResource | Error::TicketKind { .. } | Error::CrossShard { .. } => {
                (StatusCode::BAD_REQUEST, "bad_request")
            }
            Error::Shutdown => (StatusCode::SERVICE_UNAVAILABLE, "shutting_down"),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        Self::new(status, code, error.to_string())
    }
}

impl From<JsonRejection> for Problem {
    /// A body that is not the JSON asked for: 400 (axum's 422 for JSON of
    /// the wrong shape included), 413 too large, 415 not sent as JSON.
    fn from(rejection: JsonRejection) -> Self {
        let (status, code) = match rejection.status() {
            StatusCode::PAYLOAD_TOO_LARGE => (StatusCode::PAYLOAD_TOO_LARGE, "too_large"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => (StatusCode::UNSUPPORTED_MEDIA_TYPE, "not_json"),
            _ => (StatusCode::BAD_REQUEST, "bad_request"),
        };
        Self::new(status, code, rejection.body_text())
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        (self.status, Json(self.body)).into_response()
    }
}

/// Any route the service does not have.
pub(crate) async fn not_found() -> Problem {
    Problem::new(
        StatusCode::NOT_FOUND,
        "not_found",
        "no such route (docs/serve.md)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_errors_map_to_what_a_client_can_act_on() {
        let status = |e: Error| Problem::of(&e).status;
        assert_eq!(status(Error::EmptyResource), StatusCode::BAD_REQUEST);
        assert_eq!(status(Error::Shutdown), StatusCode::SERVICE_UNAVAILABLE);
    }
}
