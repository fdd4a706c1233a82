//! `kaged-mcp ping [SERVER] [-c N] [-i SECONDS]`: starts one server and measures the round
//! trip of N MCP `ping` requests, as ping(8) does: one line per ping, then a summary. Exit 0
//! when one answered, 1 when none did (or the server did not start), 2 a usage error.

use std::time::{Duration, Instant};

use crate::protocol::method::Ping;

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

/// `kaged-mcp ping`.
pub(super) fn run(args: &ServerArgs, p: &PingArgs, verbose: bool) -> u8 {
    let server = match (&p.server, args.is_adhoc()) {
        (Some(s), _) => s.clone(),
        (None, true) => args.adhoc.name.clone().unwrap_or_else(|| ADHOC.to_owned()),
        (None, false) => {
            return Failure::usage("name the server to ping: `kaged-mcp ping SERVER`")
                .exit(false, verbose)
        }
    };
    if let Err(f) = check(p) {
        return f.exit(false, verbose);
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
            Err(f) => return f.exit(false, verbose),
        };
        if let Some(f) = session.start_failures().first() {
            eprintln!(
                "error: server `{}`: {}",
                f.server,
                super::hints::line(&f.reason)
            );
            super::interrupt::end(session).await;
            return EXIT_FAILED;
        }
        let rtts = pings(&session, &server, p, &mut |line| println!("{line}")).await;
        println!("{}", summary(&server, p.count, &rtts));
        super::interrupt::end(session).await;
        if rtts.is_empty() {
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

/// Sends `p.count` pings to `server` of a started session, telling `line` the header and one
/// line per ping; the round trips of those answered.
pub(super) async fn pings(
    session: &crate::session::Session,
    server: &str,
    p: &PingArgs,
    line: &mut dyn FnMut(String),
) -> Vec<Duration> {
    let limit = session.config().timeout_for(server);
    line(format!(
        "PING {server} (MCP ping, up to {} ms each)",
        limit.as_millis()
    ));
    let mut rtts = Vec::new();
    for seq in 1..=p.count {
        if seq > 1 {
            tokio::time::sleep(Duration::from_secs_f64(p.interval)).await;
        }
        let began = Instant::now();
        let answer = tokio::time::timeout(limit, session.request::<Ping>(server, ()));
        match answer.await {
            Ok(Ok(_)) => {
                let rtt = began.elapsed();
                line(format!(
                    "answer from {server}: seq={seq} time={} ms",
                    ms(rtt)
                ));
                rtts.push(rtt);
            }
            Ok(Err(e)) => line(format!(
                "no answer from {server}: seq={seq}: {}",
                e.reason()
            )),
            Err(_) => line(format!(
                "no answer from {server}: seq={seq}: timed out after {} ms",
                limit.as_millis()
            )),
        }
    }
    rtts
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
