//! Path arithmetic on `/`-separated, absolute paths (no file system access).

/// `base` joined with `rel`; an absolute `rel` replaces `base`.
#[inline(never)]
pub fn join(base: &str, rel: &str) -> String {
    if rel.starts_with('/') {
        return rel.to_string();
    }
    let mut out = String::with_capacity(base.len() + rel.len() + 1);
    out.push_str(base.trim_end_matches('/'));
    out.push('/');
    out.push_str(rel);
    out
}

/// Removes `.` segments, empty segments and `..` with its parent. `..` at the
/// root stays at the root, as in POSIX.
#[inline(never)]
pub fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    let mut out = String::with_capacity(path.len());
    for p in &parts {
        out.push('/');
        out.push_str(p);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// The directory part of a file path.
pub fn dirname(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes() {
        assert_eq!(normalize("/a/./b/../c//d/"), "/a/c/d");
        assert_eq!(normalize("/../x"), "/x");
        assert_eq!(normalize("/"), "/");
        assert_eq!(join("/src/app/", "./x"), "/src/app/./x");
        assert_eq!(join("/src", "/abs"), "/abs");
        assert_eq!(dirname("/src/app/main.ts"), "/src/app");
        assert_eq!(dirname("/main.ts"), "/");
    }
}
