//! raft-rs logs through `slog`; this drain forwards its records to `tracing`
//! so the daemon's one subscriber sees them (no slog-term/slog-async).

use std::fmt::Write as _;

/// A `slog::Drain` that turns each record into a `tracing` event under the
/// `raft` target, with the record's key-values appended to the message.
#[derive(Debug, Clone, Copy, Default)]
pub struct TracingDrain;

struct KvText(String);

impl slog::Serializer for KvText {
    fn emit_arguments(&mut self, key: slog::Key, val: &std::fmt::Arguments<'_>) -> slog::Result {
        // Writing to a String cannot fail.
        let _ = write!(self.0, " {key}={val}");
        Ok(())
    }
}

impl slog::Drain for TracingDrain {
    type Ok = ();
    type Err = slog::Never;

    fn log(
        &self,
        record: &slog::Record<'_>,
        values: &slog::OwnedKVList,
    ) -> Result<(), slog::Never> {
        let level = match record.level() {
            slog::Level::Critical | slog::Level::Error => tracing::Level::ERROR,
            slog::Level::Warning => tracing::Level::WARN,
            slog::Level::Info => tracing::Level::INFO,
            slog::Level::Debug => tracing::Level::DEBUG,
            slog::Level::Trace => tracing::Level::TRACE,
        };
        // raft-rs logs every step at debug: format nothing unless a
        // subscriber wants the record.
        let enabled = match level {
            tracing::Level::ERROR => tracing::enabled!(target: "raft", tracing::Level::ERROR),
            tracing::Level::WARN => tracing::enabled!(target: "raft", tracing::Level::WARN),
            tracing::Level::INFO => tracing::enabled!(target: "raft", tracing::Level::INFO),
            tracing::Level::DEBUG => tracing::enabled!(target: "raft", tracing::Level::DEBUG),
            _ => tracing::enabled!(target: "raft", tracing::Level::TRACE),
        };
        if !enabled {
            return Ok(());
        }
        let mut kv = KvText(String::new());
        // The serializer above never fails; an error here would only drop
        // the key-values, never the message.
        let _ = slog::KV::serialize(&record.kv(), record, &mut kv);
        let _ = slog::KV::serialize(values, record, &mut kv);
        let msg = record.msg();
        let kv = kv.0;
        match level {
            tracing::Level::ERROR => tracing::error!(target: "raft", "{msg}{kv}"),
            tracing::Level::WARN => tracing::warn!(target: "raft", "{msg}{kv}"),
            tracing::Level::INFO => tracing::info!(target: "raft", "{msg}{kv}"),
            tracing::Level::DEBUG => tracing::debug!(target: "raft", "{msg}{kv}"),
            _ => tracing::trace!(target: "raft", "{msg}{kv}"),
        }
        Ok(())
    }
}

/// A root logger for raft-rs that forwards to `tracing`.
pub fn raft_logger() -> slog::Logger {
    slog::Logger::root(TracingDrain, slog::o!())
}
