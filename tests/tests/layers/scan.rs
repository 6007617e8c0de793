//! Reading a source file's imports with plain std: the code without
//! comments, literals and test-only items, and the `crate::`, `super::` and
//! `self::` paths left in it (each `use` tree flattened to its paths).

/// A path as written, split at `::`: `["crate", "quorum", "tally", "quorum"]`.
pub(crate) type Path = Vec<String>;

/// One path a file names, and whether it is a re-export (`pub use`), which
/// passes a child's item on rather than depending on it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Named {
    pub(crate) path: Path,
    pub(crate) reexport: bool,
    /// The inline modules (`mod name { .. }`) it is written in, outermost first.
    pub(crate) inline: Vec<String>,
}

/// The paths `source` names: every path of its `use` statements, and the
/// paths starting with `crate`, `super` or `self` in its code; outside
/// comments, string and char literals, and `#[cfg(test)]` items (unit tests
/// may import anything: docs/architecture.md).
pub(crate) fn named_paths(source: &str) -> Vec<Named> {
    let mut code = without_tests(&blank_comments_and_literals(source));
    let modules = inline_modules(&code);
    let inline = |at: usize| -> Vec<String> {
        let around = modules
            .iter()
            .filter(|(_, start, end)| (*start..*end).contains(&at));
        around.map(|(name, _, _)| name.clone()).collect()
    };
    let mut found = Vec::new();
    let mut from = 0;
    // `use` statements first, flattened and blanked; then the paths left in the code.
    while let Some(i) = find_use(&code[from..]) {
        let at = from + i;
        let before = code[..at].trim_end();
        let reexport = before.ends_with("pub") || before.ends_with("pub(crate)");
        let end = code[at..].find(';').map_or(code.len(), |e| at + e);
        let mut paths = Vec::new();
        flatten(&tokens(&code[at + 3..end]), &mut paths);
        // All of them: `pub use child::Item` names a child module without `self::`.
        found.extend(paths.into_iter().map(|path| Named {
            path,
            reexport,
            inline: inline(at),
        }));
        code.replace_range(at..end, &" ".repeat(end - at));
        from = end;
    }
    found.extend(inline_paths(&code).into_iter().map(|(at, path)| Named {
        path,
        reexport: false,
        inline: inline(at),
    }));
    found
}

/// Each inline module: its name and the span of its braces.
fn inline_modules(code: &str) -> Vec<(String, usize, usize)> {
    let mut modules = Vec::new();
    let mut from = 0;
    while let Some(i) = find_word(&code[from..], "mod") {
        let at = from + i;
        from = at + 3;
        let rest = code[from..].trim_start();
        let len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let after = rest[len..].trim_start();
        if len > 0 && after.starts_with('{') {
            let open = code.len() - after.len();
            let close = matching_brace(code, open).unwrap_or(code.len());
            modules.push((rest[..len].to_owned(), open, close));
        }
    }
    modules
}

/// Where the next `use` statement starts: the word `use` where a statement
/// can begin (not `+ use<..>` in a return type).
fn find_use(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = find_word(&text[from..], "use") {
        let at = from + i;
        let before = text[..at].trim_end();
        let starts = before.is_empty()
            || before.ends_with([';', '{', '}', ']'])
            || before.ends_with("pub")
            || before.ends_with("pub(crate)");
        if starts {
            return Some(at);
        }
        from = at + 3;
    }
    None
}

/// Where `word` starts as a whole word in `text`.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(i) = text[from..].find(word) {
        let at = from + i;
        let before = at.checked_sub(1).map(|b| bytes[b]);
        let after = bytes.get(at + word.len()).copied();
        let ident = |c: Option<u8>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_');
        if !ident(before) && !ident(after) && before != Some(b':') {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// Paths like `crate::a::B` written in code, not in a `use`, with where
/// each starts.
fn inline_paths(code: &str) -> Vec<(usize, Path)> {
    let mut paths = Vec::new();
    for head in ["crate", "super", "self"] {
        let mut from = 0;
        while let Some(i) = find_word(&code[from..], head) {
            let at = from + i;
            from = at + head.len();
            let before = code[..at].chars().next_back();
            if before == Some('$') || !code[from..].starts_with("::") {
                continue;
            }
            let mut path = vec![head.to_owned()];
            let mut rest = &code[from..];
            while let Some(next) = rest.strip_prefix("::") {
                let len = next
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(next.len());
                if len == 0 {
                    break;
                }
                path.push(next[..len].to_owned());
                rest = &next[len..];
            }
            if path.len() > 1 {
                paths.push((at, path));
            }
        }
    }
    paths
}

/// A `use` tree's tokens: identifiers, `::`, `{`, `}`, `,`, `*`.
fn tokens(tree: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = tree.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            ':' => {
                chars.next();
                out.push("::".to_owned());
            }
            '{' | '}' | ',' | '*' => out.push(c.to_string()),
            _ => {
                let mut ident = c.to_string();
                while let Some(&n) = chars.peek().filter(|n| n.is_alphanumeric() || **n == '_') {
                    ident.push(n);
                    chars.next();
                }
                out.push(ident);
            }
        }
    }
    out
}

/// Every path of a `use` tree, `a::{b, c::{d as e, self}}` giving `a::b`,
/// `a::c::d` and `a::c`.
pub(crate) fn flatten(tokens: &[String], out: &mut Vec<Path>) {
    tree(tokens, &mut 0, &[], out);
}

/// One tree from `tokens[*i]` to its end (a `,` or `}` of the group it is
/// in, left unread), under `prefix`.
fn tree(tokens: &[String], i: &mut usize, prefix: &[String], out: &mut Vec<Path>) {
    let mut path = prefix.to_vec();
    loop {
        match tokens.get(*i).map(String::as_str) {
            None | Some("," | "}") => break,
            Some("::") => *i += 1,
            Some("as") => *i += 2, // the new name: the path is what it names
            Some("{") => {
                *i += 1;
                while let Some(token) = tokens.get(*i) {
                    match token.as_str() {
                        "}" => {
                            *i += 1;
                            return;
                        }
                        "," => *i += 1,
                        _ => tree(tokens, i, &path, out),
                    }
                }
                return;
            }
            // `a::{self}` names `a` itself.
            Some("self") if !prefix.is_empty() && path.len() == prefix.len() => *i += 1,
            Some(segment) => {
                path.push(segment.to_owned());
                *i += 1;
            }
        }
    }
    if !path.is_empty() {
        out.push(path);
    }
}

/// `source` with every comment and string or char literal turned to spaces,
/// newlines kept.
pub(crate) fn blank_comments_and_literals(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let ident_before = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    if depth == 0 {
                        out.push_str("  ");
                        i += 2;
                        break;
                    }
                }
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == 'r'
            && !ident_before
            && matches!(next, Some('"' | '#'))
            && raw_start(&chars, i)
        {
            let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
            let close: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let body = i + 2 + hashes;
            let text: String = chars[body..].iter().collect();
            let end = body
                + text
                    .find(&close)
                    .map_or(chars.len() - body, |e| text[..e].chars().count())
                + close.len();
            for &ch in &chars[i..end.min(chars.len())] {
                blank(&mut out, ch);
            }
            i = end;
        } else if c == '"' {
            blank(&mut out, c);
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                let step = if chars[i] == '\\' { 2 } else { 1 };
                for &ch in &chars[i..(i + step).min(chars.len())] {
                    blank(&mut out, ch);
                }
                i += step;
            }
            blank(&mut out, '"');
            i += 1;
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            // A char literal (a lifetime `'a` has no closing quote); an
            // escape's closing quote comes after the escaped char.
            let from = if next == Some('\\') { i + 3 } else { i + 2 };
            let close = chars[from.min(chars.len())..]
                .iter()
                .position(|&q| q == '\'');
            let end = close.map_or(chars.len(), |p| from + p + 1);
            for &ch in &chars[i..end] {
                blank(&mut out, ch);
            }
            i = end;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Whether `r` at `i` opens a raw string: `r"` or `r#..#"`.
fn raw_start(chars: &[char], i: usize) -> bool {
    let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
    chars.get(i + 1 + hashes) == Some(&'"')
}

/// `code` (comments and literals already blank) without the items under
/// `#[cfg(test)]` or `#[cfg(all(test, ..))]`: through the matching `}` of
/// their first `{`, or their `;` if that comes first.
pub(crate) fn without_tests(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    loop {
        let next = ["#[cfg(test)]", "#[cfg(all(test"]
            .iter()
            .filter_map(|a| rest.find(a))
            .min();
        let Some(at) = next else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        let open = item.find('{');
        let semi = item.find(';');
        let end = match (open, semi) {
            (Some(o), Some(s)) if s < o => s + 1,
            (Some(o), _) => matching_brace(item, o).map_or(item.len(), |c| c + 1),
            (None, Some(s)) => s + 1,
            (None, None) => item.len(),
        };
        out.extend(
            item[..end]
                .chars()
                .map(|c| if c == '\n' { '\n' } else { ' ' }),
        );
        rest = &item[end..];
    }
}

/// The index of the `}` closing the `{` at `open`.
fn matching_brace(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}
