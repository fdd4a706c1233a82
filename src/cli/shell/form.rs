//! A server's elicitation (`elicitation/create`, form mode) answered on the terminal: the
//! server's message, then accept, decline or cancel, then a line per field of its
//! `requestedSchema` (strings, numbers, integers, booleans, enums; required ones marked, a
//! default shown and taken on an empty line). A wrong value is told and asked again; Ctrl-C or
//! the end of input cancels.
//!
//! A form belongs to the shell's command it came during ([`Current`]): the wait for the person
//! does not count against the call's timeout (a person's hold on its progress handle,
//! [`ProgressHandle::hold_for_person`], which a task's poll holding and releasing the same
//! handle does not end; the idle limit starts again when the form ends), and
//! when the command ends (its timeout, Ctrl-C) the form ends with it: it says so, answers
//! `cancel`, and the line typed at its prompt goes to the shell.
//!
//! What a field is and what an answer makes of it are pure functions ([`fields`], [`value`],
//! [`content`]); [`ask`] is the thin terminal layer over the shell's line reader. A URL-mode
//! request (which this client does not advertise) is declined.

use std::sync::{Arc, Mutex, PoisonError};

use kaged_mcp_layers::timeout::ProgressHandle;
use serde_json::{Map, Number, Value};
use tokio_util::sync::CancellationToken;

use crate::client::elicitation::{ElicitMode, ElicitRequest, ElicitResult};
use crate::transport::text::clean;

use super::terminal::{Asker, Read};

/// What a field takes.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Kind {
    /// Any text.
    Text,
    /// A number.
    Number,
    /// A whole number.
    Integer,
    /// Yes or no.
    Boolean,
    /// One of these values, each with its label.
    Choice(Vec<(Value, String)>),
    /// Any of these values (an array of an enum's items), each with its label.
    Many(Vec<(Value, String)>),
}

/// One field of the form.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Field {
    /// The property's name.
    pub(super) name: String,
    /// Its `title`, or the name.
    pub(super) label: String,
    /// Its `description`.
    pub(super) description: Option<String>,
    /// What it takes.
    pub(super) kind: Kind,
    /// Whether `required` lists it.
    pub(super) required: bool,
    /// Its `default`, which an empty answer takes.
    pub(super) default: Option<Value>,
}

/// The choices of an enum property: `enum` (labelled by `enumNames` when given) or `oneOf`
/// of `{const, title}` (SEP-1330); `None` when it is not an enum.
fn choices(p: &Map<String, Value>) -> Option<Vec<(Value, String)>> {
    if let Some(Value::Array(values)) = p.get("enum") {
        let names = p.get("enumNames").and_then(Value::as_array);
        return Some(
            values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let label = names
                        .and_then(|n| n.get(i))
                        .and_then(Value::as_str)
                        .map_or_else(|| text_of(v), str::to_owned);
                    (v.clone(), clean(&label, 200))
                })
                .collect(),
        );
    }
    let branches = p
        .get("oneOf")
        .or_else(|| p.get("anyOf"))
        .and_then(Value::as_array)?;
    let list: Vec<(Value, String)> = branches
        .iter()
        .filter_map(|b| {
            let v = b.get("const")?;
            let label = b
                .get("title")
                .and_then(Value::as_str)
                .map_or_else(|| text_of(v), str::to_owned);
            Some((v.clone(), clean(&label, 200)))
        })
        .collect();
    (!list.is_empty()).then_some(list)
}

/// A value as the operator types it: a string without its quotes.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => clean(s, 200),
        other => clean(&other.to_string(), 200),
    }
}

/// The fields of a `requestedSchema`: the required ones in the order `required` lists them,
/// then the others by name.
pub(super) fn fields(schema: &Map<String, Value>) -> Vec<Field> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut order: Vec<(&String, &Value)> = properties.iter().collect();
    order.sort_by_key(|(name, _)| {
        required
            .iter()
            .position(|r| r == name)
            .unwrap_or(usize::MAX)
    });
    order
        .into_iter()
        .map(|(name, p)| {
            let empty = Map::new();
            let p = p.as_object().unwrap_or(&empty);
            let items = p.get("items").and_then(Value::as_object);
            let kind = match (choices(p), p.get("type").and_then(Value::as_str)) {
                (Some(c), _) => Kind::Choice(c),
                (None, Some("array")) => match items.and_then(choices) {
                    Some(c) => Kind::Many(c),
                    None => Kind::Text,
                },
                (None, Some("number")) => Kind::Number,
                (None, Some("integer")) => Kind::Integer,
                (None, Some("boolean")) => Kind::Boolean,
                _ => Kind::Text,
            };
            Field {
                name: name.clone(),
                label: p
                    .get("title")
                    .and_then(Value::as_str)
                    .map_or_else(|| clean(name, 200), |t| clean(t, 200)),
                description: p
                    .get("description")
                    .and_then(Value::as_str)
                    .map(|d| clean(d, 400)),
                kind,
                required: required.contains(&name.as_str()),
                default: p.get("default").cloned(),
            }
        })
        .collect()
}

/// The question of one field: `label (type, required) [default]: `.
pub(super) fn question(f: &Field) -> String {
    let ty = match &f.kind {
        Kind::Text => "text".to_owned(),
        Kind::Number => "number".to_owned(),
        Kind::Integer => "integer".to_owned(),
        Kind::Boolean => "y/n".to_owned(),
        Kind::Choice(c) | Kind::Many(c) => {
            let list: Vec<String> = c
                .iter()
                .enumerate()
                .map(|(i, (_, label))| format!("{} {label}", i + 1))
                .collect();
            let many = if matches!(f.kind, Kind::Many(_)) {
                "any of, comma-separated: "
            } else {
                ""
            };
            format!("{many}{}", list.join(", "))
        }
    };
    let required = if f.required { ", required" } else { "" };
    // A choice's default by its label.
    let label = |c: &[(Value, String)], v: &Value| {
        c.iter()
            .find(|(value, _)| value == v)
            .map_or_else(|| text_of(v), |(_, l)| l.clone())
    };
    let shown = |d: &Value| match (&f.kind, d) {
        (Kind::Choice(c), _) => label(c, d),
        (Kind::Many(c), Value::Array(vs)) => {
            let all: Vec<String> = vs.iter().map(|v| label(c, v)).collect();
            all.join(", ")
        }
        _ => text_of(d),
    };
    let default = f
        .default
        .as_ref()
        .map(|d| format!(" [{}]", shown(d)))
        .unwrap_or_default();
    format!("  {} ({ty}{required}){default}: ", f.label)
}

/// What the answer `text` to field `f` gives: a value, `None` to leave it out (an empty
/// answer: the client then fills in the default, if any), or why it is not one.
pub(super) fn value(f: &Field, text: &str) -> Result<Option<Value>, String> {
    let t = text.trim();
    if t.is_empty() {
        return match (&f.default, f.required) {
            (Some(_), _) | (None, false) => Ok(None),
            (None, true) => Err(format!("{} is required", f.label)),
        };
    }
    let v = match &f.kind {
        Kind::Text => Value::String(text.to_owned()),
        Kind::Number => t
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| format!("{} takes a number, not `{}`", f.label, clean(t, 80)))?,
        Kind::Integer => t
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| format!("{} takes a whole number, not `{}`", f.label, clean(t, 80)))?,
        Kind::Boolean => match t.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" | "1" => Value::Bool(true),
            "n" | "no" | "false" | "0" => Value::Bool(false),
            _ => return Err(format!("{} takes y or n, not `{}`", f.label, clean(t, 80))),
        },
        Kind::Choice(c) => pick(f, c, t)?,
        Kind::Many(c) => Value::Array(
            t.split(',')
                .map(|one| pick(f, c, one.trim()))
                .collect::<Result<_, _>>()?,
        ),
    };
    Ok(Some(v))
}

/// The choice `t` names: its number (from 1) or its value or label.
fn pick(f: &Field, c: &[(Value, String)], t: &str) -> Result<Value, String> {
    let by_index = t
        .parse::<usize>()
        .ok()
        .and_then(|i| i.checked_sub(1))
        .and_then(|i| c.get(i));
    let by_text = c
        .iter()
        .find(|(v, label)| text_of(v) == t || label.eq_ignore_ascii_case(t));
    match by_index.or(by_text) {
        Some((v, _)) => Ok(v.clone()),
        None => Err(format!(
            "{} takes one of its choices (a number from 1 to {}), not `{}`",
            f.label,
            c.len(),
            clean(t, 80)
        )),
    }
}

/// The content of an accepted form: `schema`'s fields, each given the answer of the same
/// index (a missing answer is empty); the first wrong answer's reason otherwise.
pub(super) fn content(
    schema: &Map<String, Value>,
    answers: &[&str],
) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    for (i, f) in fields(schema).iter().enumerate() {
        if let Some(v) = value(f, answers.get(i).copied().unwrap_or(""))? {
            out.insert(f.name.clone(), v);
        }
    }
    Ok(out)
}

/// What the operator chose: `a`ccept, `d`ecline or `c`ancel (the whole word too).
pub(super) fn action(text: &str) -> Option<&'static str> {
    match text.trim().to_ascii_lowercase().as_str() {
        "a" | "accept" | "y" | "yes" => Some("accept"),
        "d" | "decline" | "n" | "no" => Some("decline"),
        "c" | "cancel" => Some("cancel"),
        _ => None,
    }
}

/// The shell's command running now, for a form asked during it. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub(super) struct Current(Arc<Mutex<Option<Running>>>);

/// One running command: ended when it ends; the progress handle of its call, once it has one.
#[derive(Debug, Clone)]
struct Running {
    ended: CancellationToken,
    progress: Option<ProgressHandle>,
}

/// Ends the command [`Current::begin`] started when dropped (answered, failed, interrupted).
#[derive(Debug)]
pub(super) struct Begun(Current);

impl Drop for Begun {
    fn drop(&mut self) {
        if let Some(running) = self.0.lock().take() {
            running.ended.cancel();
        }
    }
}

impl Current {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Running>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A command starts; it ends when the guard drops.
    pub(super) fn begin(&self) -> Begun {
        *self.lock() = Some(Running {
            ended: CancellationToken::new(),
            progress: None,
        });
        Begun(self.clone())
    }

    /// The running command's call measures its timeout on `progress`.
    pub(super) fn call_progress(&self, progress: &ProgressHandle) {
        if let Some(running) = &mut *self.lock() {
            running.progress = Some(progress.clone());
        }
    }

    fn running(&self) -> Option<Running> {
        self.lock().clone()
    }
}

/// Asks the operator through `asker` (the shell's line reader, on the terminal), for the
/// command running now (`current`): see the [module docs](self).
pub(super) async fn ask(asker: &Asker, current: &Current, req: ElicitRequest) -> ElicitResult {
    let Some(running) = current.running() else {
        return ask_form(asker, req).await;
    };
    // The call's idle limit is held while the person fills the form (a person's hold, which a
    // task's poll does not end); it starts again from the form's end.
    let _hold = running
        .progress
        .as_ref()
        .map(ProgressHandle::hold_for_person);
    // Said when the form ends unanswered with its command: the command's end seen here, or
    // this future dropped with the call (a timeout drops the call, and the form with it).
    let mut closing = Closing(true);
    tokio::select! {
        r = ask_form(asker, req) => {
            closing.0 = false;
            r
        }
        () = running.ended.cancelled() => ElicitResult::Cancel,
    }
}

/// Tells the person, when it drops still set, that the form ended with its command and that
/// the line typed at its prompt goes to the shell (the terminal still shows the form's prompt:
/// its reader cannot be stopped mid-line).
struct Closing(bool);

impl Drop for Closing {
    fn drop(&mut self) {
        if self.0 {
            eprintln!(
                "\nthe command ended; its form is closed (cancelled); the next line is the shell's"
            );
        }
    }
}

/// The form itself.
async fn ask_form(asker: &Asker, req: ElicitRequest) -> ElicitResult {
    let ElicitMode::Form { requested_schema } = &req.params.mode else {
        eprintln!(
            "note: server `{}` asked to open a URL (not supported); declined",
            clean(&req.server, 100)
        );
        return ElicitResult::Decline;
    };
    let fields = fields(requested_schema);
    eprintln!(
        "server `{}` asks: {}",
        clean(&req.server, 100),
        clean(&req.params.message, 2000)
    );
    for f in &fields {
        let description = f.description.as_deref().unwrap_or("");
        let required = if f.required { " (required)" } else { "" };
        eprintln!("  - {}{required} {description}", f.label);
    }
    let chosen = loop {
        match asker
            .line("accept, decline or cancel? [a/d/c] ", false)
            .await
        {
            Read::Line(t) => match action(&t) {
                Some(a) => break a,
                None => eprintln!("type a, d or c"),
            },
            Read::Interrupted | Read::End => break "cancel",
        }
    };
    match chosen {
        "decline" => return ElicitResult::Decline,
        "cancel" => return ElicitResult::Cancel,
        _ => {}
    }
    // Each answer checked as it is typed (a wrong one asked again), the content made of all.
    let mut answers = Vec::with_capacity(fields.len());
    for f in &fields {
        loop {
            let text = match asker.line(&question(f), false).await {
                Read::Line(t) => t,
                Read::Interrupted | Read::End => return ElicitResult::Cancel,
            };
            match value(f, &text) {
                Ok(_) => {
                    answers.push(text);
                    break;
                }
                Err(e) => eprintln!("{e}"),
            }
        }
    }
    let answers: Vec<&str> = answers.iter().map(String::as_str).collect();
    match content(requested_schema, &answers) {
        Ok(c) => ElicitResult::Accept(c),
        Err(e) => {
            eprintln!("{e}; cancelled");
            ElicitResult::Cancel
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn schema() -> Map<String, Value> {
        json!({"type": "object", "required": ["name", "age"], "properties": {
            "name": {"type": "string", "title": "Your name", "description": "as on the card"},
            "age": {"type": "integer"},
            "ratio": {"type": "number", "default": 0.5},
            "ok": {"type": "boolean"},
            "color": {"type": "string", "enum": ["red", "green"], "enumNames": ["Red", "Green"]},
            "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"], "enumNames": ["A", "B", "C"]}, "default": ["b", "c"]}
        }})
        .as_object()
        .cloned()
        .unwrap()
    }

    #[test]
    fn fields_follow_the_schema_with_required_and_defaults() {
        let f = fields(&schema());
        let names: Vec<&str> = f.iter().map(|f| f.name.as_str()).collect();
        // Required first, as `required` lists them; then by name.
        assert_eq!(
            names,
            ["name", "age", "color", "ok", "ratio", "size", "tags"]
        );
        assert_eq!(f[0].label, "Your name");
        assert!(f[0].required && f[1].required && !f[2].required);
        assert_eq!(f[1].kind, Kind::Integer);
        assert_eq!(f[4].default, Some(json!(0.5)));
        assert_eq!(f[3].kind, Kind::Boolean);
        assert_eq!(
            f[2].kind,
            Kind::Choice(vec![
                (json!("red"), "Red".into()),
                (json!("green"), "Green".into())
            ])
        );
        assert_eq!(
            f[5].kind,
            Kind::Choice(vec![
                (json!("s"), "Small".into()),
                (json!("l"), "Large".into())
            ])
        );
        assert_eq!(question(&f[0]), "  Your name (text, required): ");
        assert_eq!(question(&f[4]), "  ratio (number) [0.5]: ");
        assert_eq!(question(&f[2]), "  color (1 Red, 2 Green): ");
        assert_eq!(
            question(&f[6]),
            "  tags (any of, comma-separated: 1 A, 2 B, 3 C) [B, C]: "
        );
    }

    #[test]
    fn answers_are_typed_and_an_empty_one_leaves_the_field_to_its_default() {
        let c = content(&schema(), &["Ada", "36", "2", "y", "", "Large", "1, c"]).unwrap();
        assert_eq!(
            Value::Object(c),
            json!({"name": "Ada", "age": 36, "ok": true, "color": "green", "size": "l",
                   "tags": ["a", "c"]})
        );
        let c = content(&schema(), &["Ada", "1", "red", "no", "0.25", "1"]).unwrap();
        assert_eq!(c["ratio"], json!(0.25));
        assert_eq!(c["ok"], json!(false));
        assert_eq!(c["color"], json!("red"));
        assert_eq!(c["size"], json!("s"));
    }

    #[test]
    fn a_wrong_or_missing_answer_names_the_field() {
        assert_eq!(
            content(&schema(), &["", "1"]).unwrap_err(),
            "Your name is required"
        );
        assert!(content(&schema(), &["A", "x"])
            .unwrap_err()
            .contains("age takes a whole number"));
        assert!(content(&schema(), &["A", "1", "", "", "nan"])
            .unwrap_err()
            .contains("ratio takes a number"));
        assert!(content(&schema(), &["A", "1", "", "maybe"])
            .unwrap_err()
            .contains("takes y or n"));
        assert!(content(&schema(), &["A", "1", "3"])
            .unwrap_err()
            .contains("from 1 to 2"));
        assert!(content(&schema(), &["A", "1", "", "", "", "", "a,d"])
            .unwrap_err()
            .contains("not `d`"));
        assert!(fields(&Map::new()).is_empty());
    }

    #[test]
    fn the_action_is_a_letter_or_a_word() {
        assert_eq!(action(" A "), Some("accept"));
        assert_eq!(action("decline"), Some("decline"));
        assert_eq!(action("c"), Some("cancel"));
        assert_eq!(action("x"), None);
    }

    fn request() -> ElicitRequest {
        ElicitRequest {
            server: "srv".into(),
            id: serde_json::from_value(json!(1)).unwrap(),
            params: serde_json::from_value(json!({
                "message": "Who?",
                "requestedSchema": {"type": "object", "required": ["name"],
                    "properties": {"name": {"type": "string"}}}
            }))
            .unwrap(),
        }
    }

    /// A person who needs far longer than the call's idle limit: the form holds the limit
    /// (issue 49 point 4; before, the time spent typing counted and the call timed out while
    /// the form was still asking). The outcome, not a duration, is asserted: without the hold
    /// the call ends at the idle limit, long before the person answers.
    #[tokio::test]
    async fn the_wait_for_a_person_does_not_count_against_the_calls_timeout() {
        use kaged_mcp_layers::timeout::{ProgressAware, ProgressTimeoutLayer};
        use tower::{ServiceBuilder, ServiceExt};

        struct Call(ProgressHandle);
        impl ProgressAware for Call {
            fn progress(&self) -> Option<&ProgressHandle> {
                Some(&self.0)
            }
        }
        let asker = Asker::with_reader(|prompt| {
            // Slow typing: each line takes four times the idle limit.
            std::thread::sleep(Duration::from_millis(400));
            Read::Line(
                if prompt.starts_with("accept") {
                    "a"
                } else {
                    "Ada"
                }
                .into(),
            )
        });
        let current = Current::default();
        let begun = current.begin();
        let progress = ProgressHandle::new();
        current.call_progress(&progress);
        let form = {
            let (asker, current) = (asker.clone(), current.clone());
            tower::service_fn(move |_: Call| {
                let (asker, current) = (asker.clone(), current.clone());
                async move { Ok::<_, tower::BoxError>(ask(&asker, &current, request()).await) }
            })
        };
        let svc = ServiceBuilder::new()
            .layer(ProgressTimeoutLayer::new(
                Duration::from_millis(100),
                Duration::from_secs(3600),
            ))
            .service(form);
        let answer = svc.oneshot(Call(progress.clone())).await.unwrap();
        assert_eq!(
            answer,
            ElicitResult::Accept(json!({"name": "Ada"}).as_object().cloned().unwrap())
        );
        assert!(!progress.held_for_person(), "the hold ends with the form");
        assert!(progress.notifications() >= 1, "the idle limit starts again");
        drop(begun);
    }

    /// A task asked for the form, and its follower goes on polling while the person types:
    /// each poll holds the idle limit for its interval and releases it when answered. That
    /// release must not end the person's hold (before, it did: the call timed out while the
    /// person was still typing). The outcome is asserted: without a hold of its own the call
    /// ends at the idle limit, long before the person answers.
    #[tokio::test]
    async fn a_task_poll_does_not_end_the_wait_for_a_person() {
        use kaged_mcp_layers::timeout::{ProgressAware, ProgressTimeoutLayer};
        use tower::{ServiceBuilder, ServiceExt};

        struct Call(ProgressHandle);
        impl ProgressAware for Call {
            fn progress(&self) -> Option<&ProgressHandle> {
                Some(&self.0)
            }
        }
        let asker = Asker::with_reader(|prompt| {
            // Slow typing: each line takes four times the idle limit.
            std::thread::sleep(Duration::from_millis(400));
            Read::Line(
                if prompt.starts_with("accept") {
                    "a"
                } else {
                    "Ada"
                }
                .into(),
            )
        });
        let current = Current::default();
        let begun = current.begin();
        let progress = ProgressHandle::new();
        current.call_progress(&progress);
        let poller = tokio::spawn({
            let progress = progress.clone();
            async move {
                loop {
                    let wait = Duration::from_millis(30);
                    progress.hold_until(tokio::time::Instant::now() + wait, wait);
                    tokio::time::sleep(wait).await;
                    // The poll's answer: nothing new.
                    progress.release();
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        });
        let form = {
            let (asker, current) = (asker.clone(), current.clone());
            tower::service_fn(move |_: Call| {
                let (asker, current) = (asker.clone(), current.clone());
                async move { Ok::<_, tower::BoxError>(ask(&asker, &current, request()).await) }
            })
        };
        let svc = ServiceBuilder::new()
            .layer(ProgressTimeoutLayer::new(
                Duration::from_millis(100),
                Duration::from_secs(3600),
            ))
            .service(form);
        let answer = svc.oneshot(Call(progress.clone())).await;
        poller.abort();
        assert_eq!(
            answer.map_err(|e| e.to_string()),
            Ok(ElicitResult::Accept(
                json!({"name": "Ada"}).as_object().cloned().unwrap()
            ))
        );
        drop(begun);
    }

    /// The command ends (its timeout, Ctrl-C) while the form asks: the form ends with it,
    /// answering cancel, and lets go of the call's idle limit (before issue 49 it kept asking
    /// and ate the shell's next lines).
    #[tokio::test]
    async fn the_form_ends_when_its_command_ends() {
        let (typed, typed_rx) = std::sync::mpsc::channel::<String>();
        let asker = Asker::with_reader(move |_| typed_rx.recv().map_or(Read::End, Read::Line));
        let current = Current::default();
        let begun = current.begin();
        let progress = ProgressHandle::new();
        current.call_progress(&progress);
        let form = tokio::spawn({
            let (asker, current) = (asker.clone(), current.clone());
            async move { ask(&asker, &current, request()).await }
        });
        // The form is open (the person has not typed yet): the limit is held.
        for _ in 0..200 {
            if progress.held_for_person() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(progress.held_for_person());
        drop(begun);
        let answer = tokio::time::timeout(Duration::from_secs(10), form)
            .await
            .expect("the form ended with its command")
            .unwrap();
        assert_eq!(answer, ElicitResult::Cancel);
        assert!(!progress.held_for_person());
        // What the person types next is the shell's line, not the form's.
        typed.send("quit".into()).unwrap();
        let next = tokio::time::timeout(Duration::from_secs(10), asker.line("kaged-mcp> ", true))
            .await
            .unwrap();
        assert!(matches!(&next, Read::Line(l) if l == "quit"), "{next:?}");
    }
}
