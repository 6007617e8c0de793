//! The script bodies clients send through a proxy (`EVAL body ...` or
//! `SCRIPT LOAD body`), caught from the request bytes across chunks, so
//! the proxy can put a flushed script back itself
//! ([`ProxyMode::FlushScripts`](super::ProxyMode::FlushScripts)).

/// A call with the script's body, then the body's length line.
const EVAL_BODY: &[u8] = b"$4\r\nEVAL\r\n$";
/// A script loaded without calling it, then the body's length line.
const LOAD_BODY: &[u8] = b"$6\r\nSCRIPT\r\n$4\r\nLOAD\r\n$";
/// Larger bodies are not kept (the lock scripts are tens of kilobytes).
const LARGEST: usize = 1 << 20;

/// One request stream's catcher of script bodies.
#[derive(Debug, Default)]
pub(super) struct BodyCatcher {
    /// Bytes not yet known to hold no (start of a) body.
    pending: Vec<u8>,
}

impl BodyCatcher {
    /// Feeds `chunk`; returns the bodies that end in it.
    pub(super) fn feed(&mut self, chunk: &[u8]) -> Vec<Vec<u8>> {
        self.pending.extend_from_slice(chunk);
        let mut bodies = Vec::new();
        loop {
            let Some((at, needle)) = find_header(&self.pending) else {
                // Keep only what may be the start of a header.
                let keep = self.pending.len().min(LOAD_BODY.len() - 1);
                self.pending.drain(..self.pending.len() - keep);
                return bodies;
            };
            let after = at + needle;
            let Some(line) = find(&self.pending[after..], b"\r\n") else {
                self.pending.drain(..at);
                return bodies;
            };
            let length = std::str::from_utf8(&self.pending[after..after + line])
                .ok()
                .and_then(|digits| digits.parse::<usize>().ok())
                .filter(|&length| length <= LARGEST);
            let Some(length) = length else {
                // Not a body we keep: look past this header.
                self.pending.drain(..after);
                continue;
            };
            let start = after + line + 2;
            if self.pending.len() < start + length {
                self.pending.drain(..at);
                return bodies;
            }
            bodies.push(self.pending[start..start + length].to_vec());
            self.pending.drain(..start + length);
        }
    }
}

/// The first header in `bytes` (ASCII case ignored) and its length.
fn find_header(bytes: &[u8]) -> Option<(usize, usize)> {
    [EVAL_BODY, LOAD_BODY]
        .iter()
        .filter_map(|needle| {
            bytes
                .windows(needle.len())
                .position(|w| w.eq_ignore_ascii_case(needle))
                .map(|at| (at, needle.len()))
        })
        .min()
}

fn find(bytes: &[u8], needle: &[u8]) -> Option<usize> {
    bytes.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(body: &str) -> Vec<u8> {
        format!(
            "*3\r\n$4\r\nEVAL\r\n${}\r\n{body}\r\n$1\r\n0\r\n",
            body.len()
        )
        .into_bytes()
    }

    #[test]
    fn a_body_split_across_chunks_is_caught_once_whole() {
        let load = b"*3\r\n$6\r\nscript\r\n$4\r\nload\r\n$6\r\nreturn\r\n".to_vec();
        let mut stream = eval("return 1");
        stream.extend(b"*2\r\n$7\r\nEVALSHA\r\n$2\r\nab\r\n".iter());
        stream.extend(load);
        for cut in [1, 3, 7, 11, 20, stream.len()] {
            let mut catcher = BodyCatcher::default();
            let mut caught = Vec::new();
            for chunk in stream.chunks(cut) {
                caught.extend(catcher.feed(chunk));
            }
            assert_eq!(
                caught,
                vec![b"return 1".to_vec(), b"return".to_vec()],
                "cut {cut}"
            );
        }
    }

    #[test]
    fn calls_by_digest_and_bad_lengths_yield_nothing() {
        let mut catcher = BodyCatcher::default();
        assert!(
            catcher
                .feed(b"*3\r\n$7\r\nEVALSHA\r\n$40\r\nabc\r\n")
                .is_empty()
        );
        assert!(
            catcher
                .feed(b"*3\r\n$4\r\nEVAL\r\n$x\r\nabc\r\n")
                .is_empty()
        );
        assert!(catcher.feed(&eval("ok")).len() == 1);
    }
}
