//! Bearer tokens: every request must carry one of the service's
//! (`Authorization: Bearer <token>`), or it gets 401 and touches nothing.
//! Tokens come from a file and `REDQUORUM_SERVE_TOKEN`; they are compared
//! in constant time and never logged. Each token is a client, whose waits
//! for a lock under way at once are capped ([`Waits`]).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use super::problem::Problem;

/// The environment variable of one more token.
const TOKEN_ENV: &str = "REDQUORUM_SERVE_TOKEN";

/// The tokens the service accepts (none: unauthenticated, on loopback).
pub(crate) struct Tokens(Vec<Vec<u8>>);

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tokens({} tokens)", self.0.len())
    }
}

impl Tokens {
    /// The tokens of `file` (one per line; blank lines and `#` comments
    /// skipped) and of `REDQUORUM_SERVE_TOKEN`. `Err` says what is wrong.
    pub(crate) fn load(file: Option<&Path>) -> Result<Self, String> {
        let mut tokens = Vec::new();
        if let Some(file) = file {
            let text = std::fs::read_to_string(file)
                .map_err(|e| format!("cannot read the tokens file {}: {e}", file.display()))?;
            for line in text.lines().map(str::trim) {
                if !line.is_empty() && !line.starts_with('#') {
                    tokens.push(line.as_bytes().to_vec());
                }
            }
            if tokens.is_empty() {
                return Err(format!("the tokens file {} has no token", file.display()));
            }
        }
        if let Ok(token) = std::env::var(TOKEN_ENV) {
            let token = token.trim();
            if token.is_empty() {
                return Err(format!("{TOKEN_ENV} is set but empty"));
            }
            tokens.push(token.as_bytes().to_vec());
        }
        Ok(Self(tokens))
    }

    /// Whether there is none (unauthenticated).
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The client whose token `given` is, comparing with every token in
    /// constant time.
    fn client_of(&self, given: &[u8]) -> Option<Client> {
        let mut found = None;
        for (index, token) in self.0.iter().enumerate() {
            if bool::from(token.as_slice().ct_eq(given)) {
                found = Some(Client(index));
            }
        }
        found
    }
}

/// Who asked: the index of their token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Client(usize);

#[cfg(test)]
impl Client {
    /// The client of token `index`.
    pub(crate) fn for_tests(index: usize) -> Self {
        Self(index)
    }
}

/// The middleware: a request with a valid bearer token goes on, with its
/// [`Client`]; any other gets 401.
pub(crate) async fn require(
    State(tokens): State<Arc<Tokens>>,
    mut request: Request,
    next: Next,
) -> Response {
    let client = if tokens.is_empty() {
        Some(Client(0))
    } else {
        (request.headers().get(AUTHORIZATION))
            .and_then(|value| value.as_bytes().strip_prefix(b"Bearer "))
            .and_then(|given| tokens.client_of(given))
    };
    let Some(client) = client else {
        let mut response = Problem::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a valid bearer token is required (Authorization: Bearer <token>)",
        )
        .into_response();
        response
            .headers_mut()
            .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return response;
    };
    request.extensions_mut().insert(client);
    next.run(request).await
}

/// Waits for a lock under way, per client, capped.
#[derive(Debug)]
pub(crate) struct Waits {
    max: u32,
    under_way: Mutex<HashMap<Client, u32>>,
}

impl Waits {
    pub(crate) fn new(max: u32) -> Self {
        Self {
            max,
            under_way: Mutex::new(HashMap::new()),
        }
    }

    /// A wait of `client`'s, counted until the slot drops; `None` when it
    /// has `max` under way already.
    pub(crate) fn start(self: &Arc<Self>, client: Client) -> Option<WaitSlot> {
        let mut under_way = self
            .under_way
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let count = under_way.entry(client).or_default();
        if *count >= self.max {
            return None;
        }
        *count += 1;
        Some(WaitSlot {
            waits: Arc::clone(self),
            client,
        })
    }
}

/// One wait under way ([`Waits::start`]).
#[derive(Debug)]
pub(crate) struct WaitSlot {
    waits: Arc<Waits>,
    client: Client,
}

impl Drop for WaitSlot {
    fn drop(&mut self) {
        let mut under_way = (self.waits.under_way.lock()).unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = under_way.get_mut(&self.client) {
            *count -= 1;
            if *count == 0 {
                under_way.remove(&self.client);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_is_known_by_its_token_alone() {
        let tokens = Tokens(vec![b"alpha".to_vec(), b"beta".to_vec()]);
        assert_eq!(tokens.client_of(b"beta"), Some(Client(1)));
        assert_eq!(tokens.client_of(b"bet"), None);
        assert_eq!(tokens.client_of(b""), None);
        assert_eq!(format!("{tokens:?}"), "Tokens(2 tokens)");
    }

    #[test]
    fn waits_are_capped_per_client_and_freed_when_they_end() {
        let waits = Arc::new(Waits::new(2));
        let (a, b) = (Client(0), Client(1));
        let first = waits.start(a).expect("first");
        let _second = waits.start(a).expect("second");
        assert!(waits.start(a).is_none(), "a third wait of the same client");
        assert!(waits.start(b).is_some(), "another client's");
        drop(first);
        assert!(waits.start(a).is_some(), "freed by the first's end");
    }
}
