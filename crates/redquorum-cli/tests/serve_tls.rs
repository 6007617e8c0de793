//! `redquorum serve --tls-cert --tls-key` on real nodes: over HTTPS a lock
//! is taken and released; a client that does not trust the certificate,
//! or speaks plain HTTP to the port, gets no answer and takes nothing; a
//! stalled handshake holds up no other client; certificate files that
//! cannot be used stop the service at start with 64, naming the file.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::served::{Served, TOKEN, lease_of};
use common::{cluster, lock_key};
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use reqwest::StatusCode;
use serde_json::json;

/// A test CA's PEM, and the files of a server certificate it signed for
/// 127.0.0.1 (`cert.pem`, `key.pem`) in `dir`.
fn certificates(dir: &Path) -> (String, PathBuf, PathBuf) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::from_params(&ca_params, &ca_key);
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    (ca.pem(), cert_path, key_path)
}

fn trusting(ca_pem: &str) -> reqwest::Client {
    let ca = reqwest::Certificate::from_pem(ca_pem.as_bytes()).unwrap();
    (reqwest::Client::builder().add_root_certificate(ca))
        .build()
        .unwrap()
}

fn start_tls(nodes: &redquorum_harness::Cluster, cert: &Path, key: &Path) -> Served {
    let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
    Served::start(nodes, &["--tls-cert", cert, "--tls-key", key])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_https_a_lock_is_taken_and_released() {
    let nodes = cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = certificates(dir.path());
    let mut served = start_tls(&nodes, &cert, &key);
    assert!(
        served.url.starts_with("https://127.0.0.1:"),
        "{}",
        served.url
    );
    served.http = trusting(&ca);

    let (status, body) = served
        .post("/v1/locks/deploy", json!({"ttl_ms": 30_000}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(held_on(&nodes, "deploy"), 3);
    let (status, body) = served
        .post(
            "/v1/locks/deploy/release",
            json!({"lease": lease_of(&body)}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusting_or_plain_http_client_gets_no_answer_and_takes_nothing() {
    let nodes = cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let (_, cert, key) = certificates(dir.path());
    let served = start_tls(&nodes, &cert, &key);
    let body = json!({"ttl_ms": 30_000});

    // Another CA: the client refuses the service's certificate.
    let other_dir = tempfile::tempdir().unwrap();
    let (other_ca, _, _) = certificates(other_dir.path());
    let refused = (trusting(&other_ca).post(format!("{}/v1/locks/job", served.url)))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await;
    assert!(refused.is_err(), "{refused:?}");

    // Plain HTTP to the TLS port: the handshake fails, nothing is served.
    let plain = served.url.replace("https://", "http://");
    let refused = (reqwest::Client::new().post(format!("{plain}/v1/locks/job")))
        .bearer_auth(TOKEN)
        .json(&body)
        .timeout(Duration::from_secs(20))
        .send()
        .await;
    assert!(refused.is_err(), "{refused:?}");

    assert_eq!(held_on(&nodes, "job"), 0);
}

/// How many nodes hold a key of `resource`'s lock.
fn held_on(nodes: &redquorum_harness::Cluster, resource: &str) -> usize {
    (0..nodes.len())
        .filter(|&i| {
            let exists = nodes.command(i, &["EXISTS", &lock_key(resource)]).unwrap();
            exists.as_int() == Some(1)
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_stalled_in_its_handshake_holds_up_no_other() {
    let nodes = cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = certificates(dir.path());
    let mut served = start_tls(&nodes, &cert, &key);
    served.http = trusting(&ca);
    // Connected, a partial ClientHello sent, then silent (for up to the
    // service's 10 s handshake limit).
    let address = served.url.trim_start_matches("https://").to_owned();
    let mut stalled = std::net::TcpStream::connect(&address).unwrap();
    stalled.write_all(&[0x16, 0x03, 0x01, 0x00, 0xff]).unwrap();

    let (status, body) = tokio::time::timeout(
        Duration::from_secs(5),
        served.post("/v1/locks/other", json!({"ttl_ms": 30_000})),
    )
    .await
    .expect("answered while another client stalls in its handshake");
    assert_eq!(status, StatusCode::OK, "{body}");
    drop(stalled);
}

#[test]
fn certificate_files_that_cannot_be_used_stop_it_with_64() {
    let nodes = cluster(1);
    let dir = tempfile::tempdir().unwrap();
    let (_, cert, key) = certificates(dir.path());
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "not a PEM file\n").unwrap();
    let missing = dir.path().join("missing.pem");
    let cases = [
        (&missing, &key, "missing.pem"),
        (&garbage, &key, "no certificate"),
        (&cert, &garbage, "garbage.pem"),
        // A certificate given as its own key.
        (&cert, &cert, "cert.pem"),
    ];
    for (cert, key, said) in cases {
        let out = common::redquorum(&nodes)
            .env("REDQUORUM_SERVE_TOKEN", TOKEN)
            .args(["serve", "--listen", "127.0.0.1:0", "--tls-cert"])
            .arg(cert)
            .arg("--tls-key")
            .arg(key)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(64), "{cert:?} {key:?}: {stderr}");
        assert!(stderr.contains(said), "{said}: {stderr}");
        assert!(
            out.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    // One without the other is a usage error.
    let out = common::redquorum(&nodes)
        .env("REDQUORUM_SERVE_TOKEN", TOKEN)
        .args(["serve", "--listen", "127.0.0.1:0", "--tls-cert"])
        .arg(&cert)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64));
}
