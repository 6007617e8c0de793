use proptest::prelude::*;

use super::{ScriptTally, StreamCount, Watch};

const CALL: &[u8] = b"*5\r\n$7\r\nEVALSHA\r\n$40\r\nabc\r\n$1\r\n0\r\n";
const RESEND: &[u8] = b"*5\r\n$4\r\nEVAL\r\n$9\r\nreturn 1;\r\n$1\r\n0\r\n";
const LOAD: &[u8] = b"*3\r\n$6\r\nscript\r\n$4\r\nload\r\n$9\r\nreturn 1;\r\n";
const NOSCRIPT: &[u8] = b"-NOSCRIPT No matching script. Please use EVAL.\r\n";

#[test]
fn requests_and_replies_are_counted_by_what_they_are() {
    let tally = ScriptTally::default();
    let mut requests = Watch::new(false);
    let mut replies = Watch::new(true);
    assert!(requests.see(CALL, &tally).by_digest);
    assert!(!requests.see(&[RESEND, LOAD].concat(), &tally).by_digest);
    let answers = replies.see(&[NOSCRIPT, b":1\r\n", NOSCRIPT].concat(), &tally);
    assert!(answers.noscript && !answers.by_digest);
    assert!(!replies.see(b":1\r\n", &tally).noscript);
    tally.flushed(false);
    tally.flushed(true);
    let counts = tally.counts();
    assert_eq!(
        (
            counts.noscript,
            counts.evals,
            counts.loads,
            counts.flushes,
            counts.wide
        ),
        (2, 1, 1, 2, 1)
    );
    // The body sent twice (EVAL, then SCRIPT LOAD) is kept once.
    assert_eq!(tally.bodies(), vec![b"return 1;".to_vec()]);
}

proptest! {
    /// However a stream is cut into chunks, each occurrence is counted once.
    #[test]
    fn chunking_does_not_change_the_count(
        parts in prop::collection::vec(0_usize..4, 0..30),
        cuts in prop::collection::vec(1_usize..40, 1..60),
    ) {
        let pieces: [&[u8]; 4] = [CALL, RESEND, b"$4\r\nEVA", b"+OK\r\n"];
        let stream: Vec<u8> = parts.iter().flat_map(|&p| pieces[p].iter().copied()).collect();
        let expected = parts.iter().filter(|&&p| p == 1).count() as u64;
        let mut counter = StreamCount::new(b"$4\r\nEVAL\r\n");
        let (mut total, mut at) = (0, 0);
        for cut in cuts.iter().cycle() {
            if at >= stream.len() {
                break;
            }
            let end = (at + cut).min(stream.len());
            total += counter.feed(&stream[at..end]);
            at = end;
        }
        prop_assert_eq!(total, expected);
    }
}
