//! `kaged-mcp ping [SERVER] [-c N] [-i SECONDS] [--json]`: starts one server and measures the
//! round trip of N MCP `ping` requests, as ping(8) does: one line per ping, then a summary
//! (with `--json`, one object). The 2026-07-28 protocol has no `ping`: a server spoken to in
//! that era is measured with `server/discover` round trips instead, and the first line says
//! so. Exit 0 when one answered, 1 when none did (or the server did not start), 2 a usage
//! error.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::client::Era;
use crate::protocol::method::{Discover, Ping, Request as _};

use super::adhoc::{ServerArgs, ADHOC};
use super::output::Failure;
use super::start::{start, Scope};
use super::verb_args::PingArgs;
use super::{EXIT_FAILED, EXIT_OK};

/// Milliseconds, as ping(8) shows them.
fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}

/// The summary lines: sent, answered, lost, and min/avg/max of the answered ones.
pub(super) fn summary(server: &str, sent: u32, rtts: &[Duration]) -> String {
    let answered = rtts.len() as u32;
    let lost = ((sent - answered.min(sent)) * 100)
        .checked_div(sent)
        .unwrap_or(0);
    let mut s = format!(
        "--- {server} ping statistics ---\n{sent} pings sent, {answered} answered, {lost}% lost"
    );
    if let (Some(min), Some(max)) = (rtts.iter().min(), rtts.iter().max()) {
        let avg = rtts.iter().sum::<Duration>() / answered.max(1);
        s.push_str(&format!(
            "\nround trip min/avg/max = {}/{}/{} ms",
            ms(*min),
            ms(avg),
            ms(*max)
        ));
    }
    s
}

/// `kaged-mcp ping`: the lines as they come and the summary, or with `json` one object
/// ([`Measured::json`]; a failure is the error object).
pub(super) fn run(args: &ServerArgs, p: &PingArgs, json: bool, verbose: bool) -> u8 {
    let server = match (&p.server, args.is_adhoc()) {
        (Some(s), _) => s.clone(),
        (None, true) => args.adhoc.name.clone().unwrap_or_else(|| ADHOC.to_owned()),
        (None, false) => {
            return Failure::usage("name the server to ping: `kaged-mcp ping SERVER`")
                .exit(json, verbose)
        }
    };
    if let Err(f) = check(p) {
        return f.exit(json, verbose);
    }
    super::interrupt::block_on(async {
        let (session, _) = match start(
            args,
            Scope::Servers(std::slice::from_ref(&server)),
            false,
            verbose,
        )
        .await
        {
            Ok(s) => s,
            Err(f) => return f.exit(json, verbose),
        };
        if let Some(f) = session.start_failures().first() {
            let code = Failure::new(
                EXIT_FAILED,
                "server_not_ready",
                format!("server `{}`: {}", f.server, f.reason),
            )
            .with("server", f.server.as_str())
            .exit(json, verbose);
            super::interrupt::end(session).await;
            return code;
        }
        let measured = pings(&session, &server, p, &mut |line| {
            if !json {
                println!("{line}");
            }
        })
        .await;
        if json {
            let text = measured.json(&server, p.count).to_string();
            println!("{}", crate::escape::json(&text));
        } else {
            println!("{}", summary(&server, p.count, &measured.rtts));
        }
        super::interrupt::end(session).await;
        if measured.rtts.is_empty() {
            EXIT_FAILED
        } else {
            EXIT_OK
        }
    })
}

/// The usage error of a count or an interval out of range.
pub(super) fn check(p: &PingArgs) -> Result<(), Failure> {
    if !(p.interval.is_finite() && p.interval >= 0.0 && p.interval <= 3600.0) {
        return Err(Failure::usage(
            "-i: give the seconds between pings, from 0 to 3600",
        ));
    }
    if p.count == 0 {
        return Err(Failure::usage("-c: give at least one ping"));
    }
    Ok(())
}

/// What a run of pings measured.
pub(super) struct Measured {
    /// The request sent: `ping`, or `server/discover` to a server of the 2026-07-28 era.
    pub(super) method: &'static str,
    /// The round trips of those answered.
    pub(super) rtts: Vec<Duration>,
    /// Each request's outcome in order: its round trip in milliseconds, or why it went
    /// unanswered.
    outcomes: Vec<Result<f64, String>>,
}

impl Measured {
    /// `{"server", "method", "sent", "answered", "lost_percent", "rtt_ms": [...], "min_ms",
    /// "avg_ms", "max_ms", "pings": [{"seq", "rtt_ms"} or {"seq", "error"}]}` (min, avg and max
    /// null when none answered).
    pub(super) fn json(&self, server: &str, sent: u32) -> Value {
        let ms: Vec<f64> = self.rtts.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
        let answered = ms.len() as u32;
        let lost = ((sent - answered.min(sent)) * 100)
            .checked_div(sent)
            .unwrap_or(0);
        let min = ms.iter().copied().reduce(f64::min);
        let max = ms.iter().copied().reduce(f64::max);
        let avg = (!ms.is_empty()).then(|| ms.iter().sum::<f64>() / f64::from(answered));
        let pings: Vec<Value> = self
            .outcomes
            .iter()
            .zip(1u32..)
            .map(|(o, seq)| match o {
                Ok(ms) => json!({"seq": seq, "rtt_ms": ms}),
                Err(e) => json!({"seq": seq, "error": e}),
            })
            .collect();
        json!({
            "server": server,
            "method": self.method,
            "sent": sent,
            "answered": answered,
            "lost_percent": lost,
            "rtt_ms": ms,
            "min_ms": min,
            "avg_ms": avg,
            "max_ms": max,
            "pings": pings,
        })
    }
}

/// Sends `p.count` pings to `server` of a started session, telling `line` the header and one
/// line per ping; what was measured. A server spoken to in the 2026-07-28 era, whose protocol
/// has no `ping`, is sent `server/discover` instead, and the header says so.
pub(super) async fn pings(
    session: &crate::session::Session,
    server: &str,
    p: &PingArgs,
    line: &mut dyn FnMut(String),
) -> Measured {
    let limit = session.config().timeout_for(server);
    let modern = session
        .client(server)
        .is_ok_and(|c| c.era() == Some(Era::Modern));
    let method = if modern {
        line(format!(
            "PING {server} ({} round trip: its protocol, 2026-07-28, has no ping; up to {} ms each)",
            Discover::METHOD,
            limit.as_millis()
        ));
        Discover::METHOD
    } else {
        line(format!(
            "PING {server} (MCP ping, up to {} ms each)",
            limit.as_millis()
        ));
        Ping::METHOD
    };
    let mut rtts = Vec::new();
    let mut outcomes = Vec::new();
    for seq in 1..=p.count {
        if seq > 1 {
            tokio::time::sleep(Duration::from_secs_f64(p.interval)).await;
        }
        let began = Instant::now();
        let answer = async {
            if modern {
                session.request::<Discover>(server, ()).await.map(drop)
            } else {
                session.request::<Ping>(server, ()).await.map(drop)
            }
        };
        let why = match tokio::time::timeout(limit, answer).await {
            Ok(Ok(())) => {
                let rtt = began.elapsed();
                line(format!(
                    "answer from {server}: seq={seq} time={} ms",
                    ms(rtt)
                ));
                rtts.push(rtt);
                outcomes.push(Ok(rtt.as_secs_f64() * 1000.0));
                continue;
            }
            Ok(Err(e)) => crate::escape::visible(&e.reason()).into_owned(),
            Err(_) => format!("timed out after {} ms", limit.as_millis()),
        };
        line(format!("no answer from {server}: seq={seq}: {why}"));
        outcomes.push(Err(why));
    }
    Measured {
        method,
        rtts,
        outcomes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_counts_the_lost_and_the_round_trips() {
        let rtts = [Duration::from_micros(1500), Duration::from_micros(500)];
        assert_eq!(
            summary("s", 3, &rtts),
            "--- s ping statistics ---\n3 pings sent, 2 answered, 33% lost\n\
             round trip min/avg/max = 0.500/1.000/1.500 ms"
        );
        assert_eq!(
            summary("s", 2, &[]),
            "--- s ping statistics ---\n2 pings sent, 0 answered, 100% lost"
        );
    }
}
