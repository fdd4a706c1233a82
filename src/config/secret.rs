//! Secret values and the references to them.
//!
//! A [`Secret`] prints as `***` through `Debug` and `Display`, so no error, log line or panic
//! message can carry one by accident; the value is read with [`Secret::expose`] only where it
//! goes on the wire.

use std::fmt;

/// A secret value from `local.toml` `[secrets]`. `Debug` and `Display` print `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself; call it only where the value goes on the wire.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// A dotted reference to a secret, such as `api_keys.example`: `[secrets.api_keys] example`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SecretRef(String);

impl SecretRef {
    /// Checks `s` is a dotted path of one or more segments of `[A-Za-z0-9_-]`.
    pub fn parse(s: &str) -> Result<Self, String> {
        if s.is_empty() {
            return Err("must not be empty".into());
        }
        for seg in s.split('.') {
            if seg.is_empty() {
                return Err(format!("`{s}` is not a dotted path (empty segment)"));
            }
            if let Some(c) = seg
                .chars()
                .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
            {
                return Err(format!(
                    "`{s}` is not a dotted path: segments use letters, digits, `_` and `-`, found {c:?}"
                ));
            }
        }
        Ok(Self(s.to_owned()))
    }

    /// The reference as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The segments of the path.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('.')
    }

    /// Where the secret is written in `local.toml`: its table and key, `[secrets.a]` and `b`
    /// for `a.b`, `[secrets]` and `a` for `a`.
    pub(crate) fn table_and_key(&self) -> (String, &str) {
        match self.0.rsplit_once('.') {
            Some((table, key)) => (format!("[secrets.{table}]"), key),
            None => ("[secrets]".to_owned(), &self.0),
        }
    }
}

impl fmt::Display for SecretRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_never_prints_its_value() {
        let s = Secret::new("sk-live-abc");
        assert_eq!(format!("{s:?} {s}"), "*** ***");
        assert_eq!(format!("{:?}", Some(s.clone())), "Some(***)");
        assert_eq!(s.expose(), "sk-live-abc");
    }

    #[test]
    fn secret_ref_accepts_dotted_paths_only() {
        assert!(SecretRef::parse("api_keys.example").is_ok());
        assert!(SecretRef::parse("a").is_ok());
        assert!(SecretRef::parse("a..b").is_err());
        assert!(SecretRef::parse("a.b ").is_err());
        assert!(SecretRef::parse("").is_err());
    }

    #[test]
    fn secret_ref_names_its_table_and_key_in_local_toml() {
        let r = SecretRef::parse("api_keys.deep.notion").unwrap();
        assert_eq!(
            r.table_and_key(),
            ("[secrets.api_keys.deep]".to_owned(), "notion")
        );
        let r = SecretRef::parse("token").unwrap();
        assert_eq!(r.table_and_key(), ("[secrets]".to_owned(), "token"));
    }
}
