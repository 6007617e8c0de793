//! The CLI never prints a node password, on success or on a usage error.

use std::process::Command;

use redquorum_harness::Cluster;

const PASSWORD: &str = "cli-S3cret-9f2";

fn run(nodes: &str) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_redquorum"))
        .args(["--nodes", nodes, "demo"])
        .output()
        .expect("run redquorum");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), text)
}

/// Three nodes with an ACL user `locker` whose password is [`PASSWORD`],
/// and their URLs with that password in them.
fn password_protected_nodes() -> (Cluster, Vec<String>) {
    let cluster = Cluster::start(3).expect("start nodes");
    let pass = format!(">{PASSWORD}");
    for i in 0..3 {
        cluster
            .command(i, &["ACL", "SETUSER", "locker", "on", &pass, "~*", "+@all"])
            .expect("ACL SETUSER");
    }
    let urls = (0..3)
        .map(|i| format!("redis://locker:{PASSWORD}@127.0.0.1:{}", cluster.port(i)))
        .collect();
    (cluster, urls)
}

#[test]
fn demo_on_password_protected_nodes_never_prints_the_password() {
    let (cluster, urls) = password_protected_nodes();
    let (code, text) = run(&urls.join(","));
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains(&format!("127.0.0.1:{}", cluster.port(0))),
        "{text}"
    );
    assert!(!text.contains(PASSWORD), "password printed:\n{text}");
}

#[test]
fn a_bad_node_url_is_reported_without_its_password() {
    let (code, text) = run(&format!("redis://locker:{PASSWORD}@127.0.0.1:notaport"));
    assert_eq!(code, Some(64), "{text}");
    assert!(text.contains("invalid node url"), "{text}");
    assert!(!text.contains(PASSWORD), "password printed:\n{text}");
}

#[test]
fn status_on_password_protected_nodes_shows_their_health_but_never_the_password() {
    let (_nodes, urls) = password_protected_nodes();
    for json in [true, false] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_redquorum"));
        command.args([
            "--nodes",
            &urls.join(","),
            "status",
            "r",
            "--max-ttl",
            "600s",
        ]);
        if json {
            command.arg("--json");
        }
        let output = command.output().expect("run redquorum");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(output.status.code(), Some(0), "{text}");
        let master = if json {
            "\"role\":\"master\""
        } else {
            " master "
        };
        assert_eq!(text.matches(master).count(), 3, "{text}");
        assert!(!text.contains(PASSWORD), "password printed:\n{text}");
    }
}
