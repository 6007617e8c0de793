//! Unit tests of `nodes.rs`: the export line, the state file, process names, usage errors.

use super::*;

#[test]
fn export_line_lists_every_port_as_a_url() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        export_line(dir.path(), &[7301, 7302, 7303]),
        "export REDQUORUM_NODES=redis://127.0.0.1:7301,redis://127.0.0.1:7302,redis://127.0.0.1:7303"
    );
}

#[test]
fn state_round_trips_through_the_file() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(read_state(dir.path()), None);
    assert!(write_state(dir.path(), &[7301, 7302, 7303]).is_ok());
    assert_eq!(read_state(dir.path()), Some(vec![7301, 7302, 7303]));
}

#[test]
fn process_names_are_cut_as_the_kernel_cuts_them() {
    assert_eq!(
        process_name(Path::new("/usr/bin/redis-server")),
        "redis-server"
    );
    assert_eq!(
        process_name(Path::new("/opt/valkey-server")),
        "valkey-server"
    );
    assert_eq!(
        process_name(Path::new("/x/a-very-long-server-name")),
        "a-very-long-ser"
    );
}

#[test]
fn up_refuses_an_even_count() {
    let dir = tempfile::tempdir().unwrap();
    let failure = up(dir.path(), 4, 7301, false, None).expect_err("refused");
    assert_eq!(failure.code, exit::USAGE);
}
