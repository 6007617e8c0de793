//! What fred leaves unchecked in a node URL. fred assumes port 6379 when
//! none is given, takes port 0, and ignores an unknown query parameter, a
//! cluster URL's path and a `#fragment`: each would point the lock at a node
//! other than the one named, or drop part of what the caller wrote, so each
//! is refused here ([`UrlProblem`]) before fred reads the URL.

use url::Url;

use crate::error::UrlProblem;

/// The one query parameter a cluster URL takes: another seed, `host:port`.
const SEED: &str = "node";

/// Checks `raw`, parsed as `url`, whose scheme is one of the four node
/// schemes. A URL without a host passes: fred names that problem itself.
pub(super) fn check(raw: &str, url: &Url) -> Result<(), UrlProblem> {
    if url.host_str().is_none_or(str::is_empty) {
        return Ok(());
    }
    // First, so that no part named below can hold a piece of a password.
    if after_host(raw).contains('@') {
        return Err(UrlProblem::UnencodedUserinfo);
    }
    match url.port() {
        None => return Err(UrlProblem::NoPort),
        Some(0) => return Err(UrlProblem::PortZero),
        Some(_) => {}
    }
    let cluster = url.scheme().ends_with("-cluster");
    check_path(url.path(), cluster)?;
    for (name, value) in url.query_pairs() {
        if !cluster || name != SEED {
            return Err(UrlProblem::UnknownParameter(name.into_owned()));
        }
        if !is_seed(&value) {
            return Err(UrlProblem::BadSeed(value.into_owned()));
        }
    }
    if url.fragment().is_some() {
        return Err(UrlProblem::Fragment);
    }
    Ok(())
}

/// The text after the URL's authority (`user:password@host:port`): from the
/// first `/`, `?` or `#` after the scheme's `://`, where the URL parser ends it.
fn after_host(raw: &str) -> &str {
    let rest = raw.split_once("://").map_or(raw, |(_, rest)| rest);
    rest.find(['/', '?', '#']).map_or("", |at| &rest[at..])
}

/// An empty path or `/` names nothing; a single server's path may name a
/// database (`/2`, as fred reads it); a cluster has only database 0.
fn check_path(path: &str, cluster: bool) -> Result<(), UrlProblem> {
    if path.is_empty() || path == "/" {
        return Ok(());
    }
    if cluster {
        return Err(UrlProblem::ClusterPath(path.to_owned()));
    }
    match path.strip_prefix('/').map(str::parse::<u8>) {
        Some(Ok(_)) => Ok(()),
        _ => Err(UrlProblem::Path(path.to_owned())),
    }
}

/// `host:port` with a host and a port from 1 to 65535, as fred splits a seed
/// (one `:`, so no IPv6 literal).
fn is_seed(value: &str) -> bool {
    value.split_once(':').is_some_and(|(host, port)| {
        !host.is_empty() && !port.contains(':') && port.parse::<u16>().is_ok_and(|p| p != 0)
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::error::BuildError;
    use crate::node::connection::parse_url;

    /// The problem `raw` has, if any.
    fn problem(raw: &str) -> Option<UrlProblem> {
        check(raw, &Url::parse(raw).unwrap()).err()
    }

    #[test]
    fn what_names_one_master_exactly_passes() {
        for raw in [
            "redis://127.0.0.1:7001",
            "redis://u:pw@127.0.0.1:7001/",
            "redis://127.0.0.1:7001/15",
            "rediss://h:6380/0?",
            "redis-cluster://h:7000?node=h2:7001&node=10.0.0.3:7002",
            "rediss-cluster://u:p%23w@h:7000/",
            "redis://[::1]:7001",
        ] {
            assert_eq!(problem(raw), None, "{raw}");
        }
    }

    #[test]
    fn each_problem_is_named() {
        use UrlProblem::*;
        for (raw, expected) in [
            ("redis-cluster://h", NoPort),
            ("redis://h:", NoPort),
            ("rediss-cluster://h:0", PortZero),
            (
                "redis-cluster://h:1?bogus=1",
                UnknownParameter("bogus".into()),
            ),
            ("redis://h:1?node=h:2", UnknownParameter("node".into())),
            ("redis-cluster://h:1?=x", UnknownParameter(String::new())),
            ("redis-cluster://h:1?node=h:0", BadSeed("h:0".into())),
            ("redis-cluster://h:1?node=:2", BadSeed(":2".into())),
            ("redis-cluster://h:1?node=h", BadSeed("h".into())),
            ("redis-cluster://h:1?node", BadSeed(String::new())),
            ("redis-cluster://h:1/abc", ClusterPath("/abc".into())),
            ("redis-cluster://h:1/0", ClusterPath("/0".into())),
            ("redis://h:1/abc", Path("/abc".into())),
            ("redis://h:1/0/1", Path("/0/1".into())),
            ("redis://h:1/256", Path("/256".into())),
            ("redis-cluster://h:1#fragment", Fragment),
            ("redis://h:1#", Fragment),
            ("redis://u:12/pw@h:1", UnencodedUserinfo),
            ("redis://u:12?pw@h:1", UnencodedUserinfo),
        ] {
            assert_eq!(problem(raw), Some(expected), "{raw}");
        }
    }

    /// A node URL from parts, each good or bad: (url, password, good).
    fn node_url() -> impl Strategy<Value = (String, String, bool)> {
        // Without the `tls` feature a TLS scheme is refused for that first.
        let schemes = if cfg!(feature = "tls") {
            vec!["redis", "rediss", "redis-cluster", "rediss-cluster"]
        } else {
            vec!["redis", "redis-cluster"]
        };
        let scheme = prop::sample::select(schemes);
        let port = prop::sample::select(vec![(":7001", true), ("", false), (":0", false)]);
        let path =
            prop::sample::select(vec![("", true), ("/", true), ("/3", true), ("/abc", false)]);
        let query = prop::sample::select(vec![
            ("", true),
            ("?node=10.0.0.2:7002", true),
            ("?bogus=1", false),
            ("?node=h:0", false),
        ]);
        let fragment = prop::sample::select(vec![("", true), ("#x", false)]);
        (scheme, "Zq[a-z0-9]{4,8}", port, path, query, fragment).prop_map(
            |(scheme, password, port, path, query, fragment)| {
                let cluster = scheme.ends_with("-cluster");
                // A database path is a single server's; seeds are a cluster's.
                let path_good = path.1 && (!cluster || path.0.len() < 2);
                let query_good = query.1 && (cluster || query.0.is_empty());
                let url = format!(
                    "{scheme}://u:{password}@10.0.0.1{}{}{}{}",
                    port.0, path.0, query.0, fragment.0
                );
                let good = port.1 && path_good && query_good && fragment.1;
                (url, password, good)
            },
        )
    }

    proptest! {
        /// A URL is taken exactly when every part is good; a refusal is one
        /// line naming the node, without its password.
        #[test]
        fn a_url_is_taken_iff_every_part_is_good((url, password, good) in node_url()) {
            match parse_url(&url) {
                Ok(_) => prop_assert!(good, "{url} was taken"),
                Err(err) => {
                    prop_assert!(!good, "{url}: {err}");
                    prop_assert!(matches!(err, BuildError::MalformedUrl { .. }), "{url}: {err:?}");
                    let text = format!("{err} {err:?}");
                    prop_assert!(!text.contains(&password), "{text}");
                    prop_assert!(!err.to_string().contains('\n'), "{err}");
                    prop_assert!(err.to_string().starts_with("invalid node url redis"), "{err}");
                }
            }
        }

        /// Any text after a node scheme is refused or taken, never a panic.
        #[test]
        fn any_text_after_a_scheme_is_an_answer_not_a_panic(rest in ".{0,40}") {
            for scheme in ["redis://", "redis-cluster://"] {
                let _ = parse_url(&format!("{scheme}{rest}"));
            }
        }
    }
}
