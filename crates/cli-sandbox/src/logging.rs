//! The full binary's log subscriber: how much goes to stderr (`-v`, `RUST_LOG`) and when the
//! subscriber that writes it is built.
//!
//! Without `-v` and without `RUST_LOG` only warnings and errors are written, and a launch that
//! goes well writes none: building the subscriber's span registry then would cost every launch
//! for nothing (20 to 45 µs of each scripted step, the span registry the most of it:
//! BENCHMARKS.md). [`AtFirstWarning`] answers "only warnings and errors" by
//! itself and builds the subscriber that writes them at the first one, with the same filter and
//! the same lines as any other level (`helper::subscriber`). Not here: the helper binary's own
//! logging (`helper.rs`, which logs nothing unless asked).

use std::sync::OnceLock;

use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Dispatch, Event, Level, Metadata, Subscriber};
use tracing_core::span::Current;
use tracing_subscriber::util::SubscriberInitExt;

use crate::helper;

/// Log lines on stderr, without times; `RUST_LOG` wins over `-v`. Both binaries read it as a
/// `target=level` list (`Targets`: `info`, `launch=debug,warn`), without the regular-expression
/// engine of `EnvFilter`, whose span and field filters no one asked of a launcher and whose
/// tables made every start of the binary slower (BENCHMARKS.md). A value that is not such a list
/// is said, and `-v`'s level holds.
pub fn init_tracing(verbose: u8) {
    let asked = std::env::var_os("RUST_LOG");
    if verbose == 0 && asked.is_none() {
        let _ = AtFirstWarning::default().try_init();
        return;
    }
    let level = crate::verbosity_filter(verbose);
    let filter = asked
        .as_ref()
        .map(|value| helper::targets(value).ok_or(value));
    match filter {
        Some(Ok(filter)) => helper::start_subscriber(filter),
        Some(Err(value)) => {
            helper::start_subscriber(helper::targets(level.as_ref()).expect("a level is a list"));
            tracing::warn!(
                RUST_LOG = %value.to_string_lossy(),
                "not read: a list of levels and target=level is (info, launch=debug,warn); logging at -v's level, {level}"
            );
        }
        None => {
            helper::start_subscriber(helper::targets(level.as_ref()).expect("a level is a list"))
        }
    }
}

/// Warnings and errors, written by a subscriber built at the first of them (the module's doc).
/// It decides what is enabled itself, by level alone, and hands every span and event it enabled
/// to that subscriber: a span's id is always the built subscriber's own.
#[derive(Default)]
pub struct AtFirstWarning {
    lines: OnceLock<Dispatch>,
}

impl AtFirstWarning {
    /// The most verbose level it lets through.
    const LEVEL: Level = Level::WARN;

    fn lines(&self) -> &Dispatch {
        self.lines
            .get_or_init(|| Dispatch::new(helper::subscriber(LevelFilter::from_level(Self::LEVEL))))
    }
}

impl Subscriber for AtFirstWarning {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if self.enabled(metadata) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::from_level(Self::LEVEL))
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        // Levels order by verbosity: ERROR < WARN < INFO.
        *metadata.level() <= Self::LEVEL
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        self.lines().new_span(span)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        self.lines().record(span, values)
    }

    fn record_follows_from(&self, span: &Id, follows: &Id) {
        self.lines().record_follows_from(span, follows)
    }

    fn event(&self, event: &Event<'_>) {
        let lines = self.lines();
        if lines.enabled(event.metadata()) {
            lines.event(event)
        }
    }

    fn enter(&self, span: &Id) {
        self.lines().enter(span)
    }

    fn exit(&self, span: &Id) {
        self.lines().exit(span)
    }

    fn clone_span(&self, id: &Id) -> Id {
        self.lines().clone_span(id)
    }

    fn try_close(&self, id: Id) -> bool {
        self.lines().try_close(id)
    }

    fn current_span(&self) -> Current {
        self.lines
            .get()
            .map_or_else(Current::none, Dispatch::current_span)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_builds_nothing_until_a_warning_and_lets_through_warnings_and_errors_only() {
        let quiet = AtFirstWarning::default();
        let dispatch = Dispatch::new(quiet);
        tracing::dispatcher::with_default(&dispatch, || {
            tracing::info!("not this");
            tracing::debug!("nor this");
            let span = tracing::info_span!("helper", chat = "c").entered();
            drop(span);
        });
        let quiet = dispatch.downcast_ref::<AtFirstWarning>().unwrap();
        assert!(
            quiet.lines.get().is_none(),
            "built for an info event or span"
        );
        tracing::dispatcher::with_default(&dispatch, || tracing::warn!("this"));
        assert!(quiet.lines.get().is_some(), "a warning went nowhere");
    }
}
