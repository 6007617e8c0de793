//! The masters of a `RedlockBuilder` as the caller named them: a
//! `redis://` URL, or a fred [`Config`](fred::prelude::Config) the caller
//! already has; both become one lock-safe client per node at `build()`.

use crate::error::BuildError;
use crate::node::connection;
use crate::node_id::NodeId;

/// One master as the caller named it.
#[derive(Clone)]
pub(crate) enum NodeSource {
    /// `redis://...` or `rediss://...`.
    Url(String),
    /// A fred config the caller built (boxed: it is large).
    Config(Box<fred::prelude::Config>),
}

impl NodeSource {
    /// For `Debug`: the URL with its password replaced, or the config's node.
    pub(crate) fn describe(&self) -> String {
        match self {
            NodeSource::Url(url) => connection::redact_url(url),
            NodeSource::Config(config) => match connection::from_config((**config).clone()) {
                Ok((_, id)) => format!("config {id}"),
                Err(_) => "config (not a single master)".to_owned(),
            },
        }
    }

    /// fred's config, the node's identity, and whether it uses TLS.
    pub(crate) fn parse(&self) -> Result<(fred::prelude::Config, NodeId, bool), BuildError> {
        let (config, id) = match self {
            NodeSource::Url(url) => connection::parse_url(url)?,
            NodeSource::Config(config) => connection::from_config((**config).clone())?,
        };
        let tls = connection::is_tls(&config);
        Ok((config, id, tls))
    }
}
