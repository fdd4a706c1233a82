//! The token store's tests: modes, atomic writes, refusals, and no secret in errors.

use super::*;

fn key() -> StoreKey {
    StoreKey::new("github", "https://mcp.example.com/mcp", "dynamic")
}

fn tokens(access: &str) -> StoredTokens {
    StoredTokens {
        server_url: "https://mcp.example.com/mcp".into(),
        client_id: "client-123".into(),
        client_secret: Some(Token::new("cs-secret-value")),
        token_endpoint_auth_method: Some("client_secret_basic".into()),
        registered: true,
        issuer: Some("https://auth.example.com".into()),
        token_endpoint: Some("https://auth.example.com/token".into()),
        resource: Some("https://mcp.example.com/mcp".into()),
        access_token: Some(Token::new(access)),
        refresh_token: Some(Token::new("rt-secret-value")),
        token_type: None,
        expires_at: Some(1_700_003_600),
        scopes: vec!["read".into(), "write".into()],
        saved_at: 1_700_000_000,
    }
}

/// A store in a fresh directory that does not exist yet (its parent is the temp dir).
fn store() -> (tempfile::TempDir, TokenStore) {
    let tmp = tempfile::tempdir().unwrap();
    let store = TokenStore::new(tmp.path().join("state").join("oauth"));
    (tmp, store)
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().mode() & 0o7777
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn round_trips_tokens() {
    let (_tmp, store) = store();
    assert_eq!(store.load(&key()).unwrap(), None);
    store.save(&key(), &tokens("at-1")).unwrap();
    assert_eq!(store.load(&key()).unwrap(), Some(tokens("at-1")));
    store.save(&key(), &tokens("at-2")).unwrap();
    let loaded = store.load(&key()).unwrap().unwrap();
    assert_eq!(loaded.access_token.unwrap().expose(), "at-2");
}

#[test]
fn file_is_0600_and_directory_0700() {
    let (_tmp, store) = store();
    store.save(&key(), &tokens("at")).unwrap();
    assert_eq!(mode(&store.path(&key())), 0o600);
    assert_eq!(mode(store.dir()), 0o700);
}

#[test]
fn file_readable_by_others_is_refused_naming_path_and_mode() {
    let (_tmp, store) = store();
    store.save(&key(), &tokens("at")).unwrap();
    let path = store.path(&key());
    fs::set_permissions(&path, Permissions::from_mode(0o644)).unwrap();
    let msg = store.load(&key()).unwrap_err().to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(msg.contains("0644"), "{msg}");
    assert!(msg.contains("chmod 600"), "{msg}");
}

#[test]
fn directory_open_to_others_is_refused_on_save() {
    let (_tmp, store) = store();
    fs::create_dir_all(store.dir()).unwrap();
    fs::set_permissions(store.dir(), Permissions::from_mode(0o755)).unwrap();
    let msg = store.save(&key(), &tokens("at")).unwrap_err().to_string();
    assert!(msg.contains(&store.dir().display().to_string()), "{msg}");
    assert!(msg.contains("0755") && msg.contains("chmod 700"), "{msg}");
    assert!(names(store.dir()).is_empty());
}

#[test]
fn symbolic_link_is_refused() {
    let (tmp, store) = store();
    store.save(&key(), &tokens("at")).unwrap();
    let elsewhere = tmp.path().join("elsewhere.json");
    fs::rename(store.path(&key()), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, store.path(&key())).unwrap();
    let err = store.load(&key()).unwrap_err();
    assert!(matches!(err, StoreError::NotRegularFile { .. }), "{err}");
}

#[test]
fn file_or_directory_of_another_user_is_refused() {
    if !nix::unistd::geteuid().is_root() {
        // Only root can give a file away; any user can meet a directory that is not theirs:
        // `/tmp` is root's.
        let store = TokenStore::new(std::env::temp_dir());
        let err = store.save(&key(), &tokens("at")).unwrap_err();
        assert!(
            matches!(err, StoreError::NotOwned { owner: 0, .. }),
            "{err}"
        );
        return;
    }
    let (_tmp, store) = store();
    store.save(&key(), &tokens("at")).unwrap();
    let path = store.path(&key());
    std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
    let err = store.load(&key()).unwrap_err();
    assert!(
        matches!(err, StoreError::NotOwned { owner: 65534, .. }),
        "{err}"
    );
    std::os::unix::fs::chown(store.dir(), Some(65534), None).unwrap();
    let err = store.save(&key(), &tokens("at")).unwrap_err();
    assert!(matches!(err, StoreError::NotOwned { .. }), "{err}");
    assert!(err.to_string().contains(&store.dir().display().to_string()));
}

#[test]
fn file_for_another_url_is_refused_as_stale() {
    let (_tmp, store) = store();
    let mut other = tokens("at");
    other.server_url = "https://elsewhere.example.com/mcp".into();
    store.save(&key(), &other).unwrap();
    let err = store.load(&key()).unwrap_err();
    assert!(matches!(err, StoreError::Stale { .. }), "{err}");
}

#[test]
fn save_over_a_file_leaves_no_temporary_file() {
    let (_tmp, store) = store();
    store.save(&key(), &tokens("at-1")).unwrap();
    store.save(&key(), &tokens("at-2")).unwrap();
    assert_eq!(names(store.dir()), vec![key().file_name()]);
}

#[test]
fn failed_write_keeps_the_old_file_and_removes_the_temporary_one() {
    let (_tmp, store) = store();
    store.save(&key(), &tokens("at-old")).unwrap();
    let err = write_atomically(store.dir(), &key().file_name(), |file| {
        file.write_all(b"{\"server_url\": \"half")?;
        Err(io::Error::other("disk full"))
    })
    .unwrap_err();
    assert!(err.to_string().contains("disk full"), "{err}");
    assert_eq!(names(store.dir()), vec![key().file_name()]);
    let loaded = store.load(&key()).unwrap().unwrap();
    assert_eq!(loaded.access_token.unwrap().expose(), "at-old");
}

/// Runs the test `name` of this test binary again as user and group 65534 (nobody), for a test
/// that root cannot run as itself; `true` when this process is that run.
fn as_nobody(name: &str) -> bool {
    const MARK: &str = "KAGED_TEST_AS_NOBODY";
    if std::env::var_os(MARK).is_some() {
        return true;
    }
    use std::os::unix::process::CommandExt as _;
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(MARK, "1")
        .current_dir(std::env::temp_dir())
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{name} as nobody: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    false
}

#[test]
fn save_into_a_read_only_directory_keeps_the_old_file() {
    // Root writes into a read-only directory: as root, the test runs as nobody.
    if nix::unistd::geteuid().is_root()
        && !as_nobody("oauth::store::tests::save_into_a_read_only_directory_keeps_the_old_file")
    {
        return;
    }
    let (_tmp, store) = store();
    store.save(&key(), &tokens("at-old")).unwrap();
    fs::set_permissions(store.dir(), Permissions::from_mode(0o500)).unwrap();
    let result = store.save(&key(), &tokens("at-new"));
    fs::set_permissions(store.dir(), Permissions::from_mode(0o700)).unwrap();
    assert!(result.is_err());
    assert_eq!(names(store.dir()), vec![key().file_name()]);
    let loaded = store.load(&key()).unwrap().unwrap();
    assert_eq!(loaded.access_token.unwrap().expose(), "at-old");
}

#[test]
fn debug_shows_no_token() {
    let debug = format!("{:?}", tokens("at-secret-value"));
    for secret in ["at-secret-value", "rt-secret-value", "cs-secret-value"] {
        assert!(!debug.contains(secret), "{debug}");
    }
    assert!(debug.contains("access_token: Some(***)"), "{debug}");
}

#[test]
fn corrupt_file_error_quotes_nothing_from_the_file() {
    let (_tmp, store) = store();
    store.save(&key(), &tokens("at")).unwrap();
    let path = store.path(&key());
    let bodies = [
        r#"{"access_token": "leaked-secret-1", "#,
        r#"{"server_url": "x", "client_id": "c", "saved_at": "leaked-secret-2"}"#,
        r#"leaked-secret-3"#,
    ];
    for body in bodies {
        fs::write(&path, body).unwrap();
        let err = store.load(&key()).unwrap_err();
        let msg = format!("{err} {err:?}");
        assert!(matches!(err, StoreError::Corrupt { .. }), "{msg}");
        assert!(msg.contains("corrupt") && !msg.contains("leaked"), "{msg}");
    }
}

#[test]
fn remove_says_whether_there_was_a_file() {
    let (_tmp, store) = store();
    store.save(&key(), &tokens("at")).unwrap();
    assert!(store.remove(&key()).unwrap());
    assert!(!store.remove(&key()).unwrap());
    assert_eq!(store.load(&key()).unwrap(), None);
}

#[test]
fn file_name_is_server_and_hash_of_url_and_client() {
    // printf 'https://mcp.example.com/mcp\ndynamic' | sha256sum
    assert_eq!(key().file_name(), "github-62ce0f2df0387390.json");
    let other_client = StoreKey::new("github", "https://mcp.example.com/mcp", "client-123");
    assert_ne!(other_client.file_name(), key().file_name());
    let odd = StoreKey::new("Git Hub/../x", "u", "c").file_name();
    assert!(odd.starts_with("_it__ub____x-"), "{odd}");
}

#[test]
fn default_dir_prefers_an_absolute_xdg_state_home() {
    let dir = |xdg: Option<&str>, home: Option<&str>| {
        default_dir_from(xdg.map(OsStr::new), home.map(OsStr::new))
    };
    assert_eq!(
        dir(Some("/state"), Some("/home/op")).unwrap(),
        Path::new("/state/kaged-mcp/oauth")
    );
    for xdg in [None, Some(""), Some("relative/state")] {
        assert_eq!(
            dir(xdg, Some("/home/op")).unwrap(),
            Path::new("/home/op/.local/state/kaged-mcp/oauth")
        );
    }
    assert!(matches!(dir(None, None), Err(StoreError::NoStateDir)));
    assert!(matches!(
        dir(Some(""), Some("")),
        Err(StoreError::NoStateDir)
    ));
    assert!(matches!(
        dir(None, Some("home")),
        Err(StoreError::NoStateDir)
    ));
}
