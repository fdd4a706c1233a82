//! URIs as logs and errors show them: a resource's URI or a server's URL without what may be a
//! credential.

/// `uri` as logs and errors show it: without user info (`scheme://user:secret@host` →
/// `scheme://host`) and without its query (`?token=…` → `?…`), where credentials travel.
pub fn redact_uri(uri: &str) -> std::borrow::Cow<'_, str> {
    let authority_start = uri.find("://").map(|i| i + 3);
    let userinfo_end = authority_start.and_then(|start| {
        let authority_end = uri[start..]
            .find(['/', '?', '#'])
            .map_or(uri.len(), |e| start + e);
        uri[start..authority_end]
            .rfind('@')
            .map(|at| (start, start + at + 1))
    });
    let query = uri.find('?');
    if userinfo_end.is_none() && query.is_none() {
        return std::borrow::Cow::Borrowed(uri);
    }
    let mut out = String::with_capacity(uri.len());
    let head_end = query.unwrap_or(uri.len());
    match userinfo_end {
        Some((start, end)) if end <= head_end => {
            out.push_str(&uri[..start]);
            out.push_str(&uri[end..head_end]);
        }
        _ => out.push_str(&uri[..head_end]),
    }
    if query.is_some() {
        out.push_str("?…");
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uri_loses_its_user_info_and_its_query_and_nothing_else() {
        assert_eq!(
            redact_uri("demo://resource/dynamic/text/1"),
            "demo://resource/dynamic/text/1"
        );
        assert_eq!(redact_uri("file:///a/b.txt"), "file:///a/b.txt");
        assert_eq!(
            redact_uri("https://user:s3cret@host.example/x?token=abc#f"),
            "https://host.example/x?…"
        );
        assert_eq!(redact_uri("db://me@host/table"), "db://host/table");
        assert_eq!(
            redact_uri("mail://host/a@b"),
            "mail://host/a@b",
            "an @ past the authority stays"
        );
        assert_eq!(redact_uri("x:?q"), "x:?…");
    }
}
