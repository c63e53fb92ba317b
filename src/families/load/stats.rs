//! Measurements of a burst: HDR histograms in microseconds (raw: from send
//! to last body byte; corrected: raw plus the time the request queued behind
//! its user's unanswered previous one, so a stalled user's queued requests
//! count their wait, i.e. coordinated omission is corrected; lateness: the
//! generator's own delay past the scheduled send, see `engine::measure`),
//! status counts, error kinds. Memory stays flat:
//! histograms and counters only, never a record per request.
//!
//! Also the files: `.hgrm` (HdrHistogram percentile distribution text, as
//! `HistogramLogProcessor`/plotters read it), `.hlog` (interval log through
//! the hdrhistogram crate's writer); the JSON summary is `summary.rs`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;

use super::engine::Measured;
use super::pool::PoolCounts;

/// Highest trackable latency: 10 minutes in µs (longer values are clamped).
pub const MAX_US: u64 = 600_000_000;

pub fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_US, 3).expect("static histogram bounds")
}

fn record(h: &mut Histogram<u64>, d: Duration) {
    let us = (d.as_micros() as u64).clamp(1, MAX_US);
    // Cannot fail: the value is clamped into the trackable range.
    let _ = h.record(us);
}

/// Figures of one request kind.
#[derive(Clone)]
pub struct KindStats {
    pub raw: Histogram<u64>,
    pub corrected: Histogram<u64>,
    /// The generator's own lateness (scheduled to real send, less the wait
    /// the target caused).
    pub lateness: Histogram<u64>,
    pub statuses: BTreeMap<u16, u64>,
    /// Transport errors by kind (`timeout`, `connect`, ...).
    pub errors: BTreeMap<String, u64>,
    pub requests: u64,
    /// Answered outside the kind's success set, 429 excluded.
    pub failed: u64,
    pub r429: u64,
}

impl KindStats {
    pub fn new() -> Self {
        KindStats {
            raw: new_hist(),
            corrected: new_hist(),
            lateness: new_hist(),
            statuses: BTreeMap::new(),
            errors: BTreeMap::new(),
            requests: 0,
            failed: 0,
            r429: 0,
        }
    }
    pub fn add(&mut self, o: &KindStats) {
        // Same bounds on both sides: adding cannot fail.
        let _ = self.raw.add(&o.raw);
        let _ = self.corrected.add(&o.corrected);
        let _ = self.lateness.add(&o.lateness);
        for (k, v) in &o.statuses {
            *self.statuses.entry(*k).or_default() += v;
        }
        for (k, v) in &o.errors {
            *self.errors.entry(k.clone()).or_default() += v;
        }
        self.requests += o.requests;
        self.failed += o.failed;
        self.r429 += o.r429;
    }
}

impl Default for KindStats {
    fn default() -> Self {
        Self::new()
    }
}

/// What one request ended as.
pub enum Result_ {
    Status { status: u16, success: bool },
    Transport(&'static str),
}

/// What the pool says about one slot (open-arrival bursts only).
#[derive(Debug, Clone, Copy)]
pub struct SlotFacts {
    /// It came due before any user was free to claim it.
    pub waited: bool,
    /// Part of that wait was charged (the pool was full).
    pub charged: bool,
    /// When it was answered, a slot was waiting on the full pool.
    pub bound: bool,
    /// It was sent with no more in flight than the users the pool starts with.
    pub light: bool,
}

/// A shard of recorders (users are spread over shards).
pub struct Shard {
    pub kinds: Vec<KindStats>,
    pub pool: PoolCounts,
    pub interval_raw: Histogram<u64>,
    pub interval_corrected: Histogram<u64>,
    pub interval_errors: u64,
}

impl Shard {
    pub fn new(kinds: usize) -> Self {
        Shard {
            kinds: (0..kinds).map(|_| KindStats::new()).collect(),
            pool: PoolCounts::new(),
            interval_raw: new_hist(),
            interval_corrected: new_hist(),
            interval_errors: 0,
        }
    }
    /// Records a slot of the open-arrival pool: `record` plus what it waited.
    pub fn record_slot(&mut self, kind: usize, m: &Measured, r: &Result_, f: SlotFacts) {
        self.pool.waited += u64::from(f.waited);
        self.pool.waited_full += u64::from(f.charged);
        if f.bound {
            record(&mut self.pool.raw_bound, m.raw);
        }
        if f.light {
            record(&mut self.pool.raw_light, m.raw);
        }
        self.record(kind, m, r);
    }

    pub fn record(&mut self, kind: usize, m: &Measured, r: &Result_) {
        let k = &mut self.kinds[kind];
        k.requests += 1;
        record(&mut k.raw, m.raw);
        record(&mut k.corrected, m.corrected);
        record(&mut k.lateness, m.lateness);
        record(&mut self.interval_raw, m.raw);
        record(&mut self.interval_corrected, m.corrected);
        match r {
            Result_::Status { status, success } => {
                *k.statuses.entry(*status).or_default() += 1;
                if *status == 429 {
                    k.r429 += 1;
                } else if !success {
                    k.failed += 1;
                    self.interval_errors += 1;
                }
            }
            Result_::Transport(what) => {
                *k.errors.entry((*what).to_owned()).or_default() += 1;
                k.failed += 1;
                self.interval_errors += 1;
            }
        }
    }
}

/// Microseconds as milliseconds with 3 decimals, for people and JSON.
pub fn ms(us: f64) -> f64 {
    (us / 1000.0 * 1000.0).round() / 1000.0
}

/// The percentile distribution in HdrHistogram's text format, values in ms
/// (`outputValueUnitScalingRatio` 1000, as wrk2 prints it).
pub fn write_hgrm(path: &Path, h: &Histogram<u64>) -> std::io::Result<()> {
    let mut out = String::new();
    out.push_str("       Value     Percentile TotalCount 1/(1-Percentile)\n\n");
    if !h.is_empty() {
        let mut total = 0u64;
        for v in h.iter_quantiles(5) {
            total += v.count_since_last_iteration();
            let q = v.quantile_iterated_to();
            let value = v.value_iterated_to() as f64 / 1000.0;
            if q < 1.0 {
                out.push_str(&format!(
                    "{:12.3} {:14.12} {:10} {:14.2}\n",
                    value,
                    q,
                    total,
                    1.0 / (1.0 - q)
                ));
            } else {
                out.push_str(&format!("{:12.3} {:14.12} {:10}\n", value, q, total));
            }
        }
    }
    let mean = if h.is_empty() { 0.0 } else { h.mean() / 1000.0 };
    let sd = if h.is_empty() {
        0.0
    } else {
        h.stdev() / 1000.0
    };
    out.push_str(&format!(
        "#[Mean    = {:12.3}, StdDeviation   = {:12.3}]\n",
        mean, sd
    ));
    out.push_str(&format!(
        "#[Max     = {:12.3}, Total count    = {:12}]\n",
        h.max() as f64 / 1000.0,
        h.len()
    ));
    out.push_str(&format!(
        "#[Buckets = {:12}, SubBuckets     = {:12}]\n",
        h.buckets(),
        // Java's subBucketCount: 2 * 10^sigfig rounded up to a power of two.
        (2 * 10u64.pow(h.sigfig() as u32)).next_power_of_two()
    ));
    crate::files::write_atomic(path, out.as_bytes())
}

/// An interval log being written as the burst runs, one interval a second,
/// tagged `raw` and `corrected`.
pub struct HlogFile {
    file: std::fs::File,
    base: SystemTime,
    serializer: V2DeflateSerializer,
}

impl HlogFile {
    pub fn create(path: &Path, base: SystemTime, comment: &str) -> std::io::Result<Self> {
        let mut file = std::fs::File::create(path)?;
        let mut serializer = V2DeflateSerializer::new();
        let mut buf = Vec::new();
        IntervalLogWriterBuilder::new()
            .add_comment(comment)
            .add_comment("latencies in microseconds; tags: raw (send to last byte), corrected (raw plus the wait the target caused since the scheduled send)")
            .with_start_time(base)
            .with_base_time(base)
            .with_max_value_divisor(1000.0)
            .begin_log_with(&mut buf, &mut serializer)?;
        file.write_all(&buf)?;
        Ok(HlogFile {
            file,
            base,
            serializer,
        })
    }

    /// Appends one interval: `start` since the base time, `len` long.
    pub fn write(
        &mut self,
        start: SystemTime,
        len: Duration,
        raw: &Histogram<u64>,
        corrected: &Histogram<u64>,
    ) -> std::io::Result<()> {
        self.write_tagged(start, len, &[("raw", raw), ("corrected", corrected)])
    }

    /// Appends one histogram per tag, all over the same interval (tags have
    /// no space, comma or line break).
    pub fn write_tagged(
        &mut self,
        start: SystemTime,
        len: Duration,
        hists: &[(&str, &Histogram<u64>)],
    ) -> std::io::Result<()> {
        let mut buf = Vec::new();
        {
            let mut w = IntervalLogWriterBuilder::new()
                .with_max_value_divisor(1000.0)
                .begin_log_with(&mut buf, &mut self.serializer)?;
            let at = start.duration_since(self.base).unwrap_or_default();
            for (tag, h) in hists {
                let tag = Tag::new(tag).ok_or_else(|| {
                    std::io::Error::other(format!("`{tag}` cannot be an interval log tag"))
                })?;
                w.write_histogram(h, at, len, Some(tag))
                    .map_err(|e| std::io::Error::other(e.to_string()))?;
            }
        }
        // The builder repeats the divisor comment each time; keep intervals only.
        let text = String::from_utf8_lossy(&buf);
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            writeln!(self.file, "{line}")?;
        }
        self.file.flush()
    }
}

/// One interval read back from an `.hlog`.
pub struct Interval {
    pub tag: String,
    /// Absolute start (the log's base time plus the interval's offset).
    pub start: SystemTime,
    pub len: Duration,
    pub hist: Histogram<u64>,
}

/// One interval as stored: its histogram still encoded (a few hundred
/// bytes where the decoded histogram holds 21,504 counters), decoded on
/// demand with every declared size checked first ([`decode_checked`]).
pub struct Encoded {
    pub tag: String,
    pub start: SystemTime,
    pub len: Duration,
    /// The V2 (deflate) serialisation, base64 decoded.
    pub bytes: Vec<u8>,
}

impl Encoded {
    pub fn decode(&self) -> Result<Histogram<u64>, String> {
        decode_checked(&self.bytes)
    }
}

/// Largest `.hlog` read back (a shard of a 10-minute burst writes a few MB).
pub const MAX_HLOG_BYTES: u64 = 256 * 1024 * 1024;
/// Largest inflated histogram read back: tminus's own (1 µs to 10 min at 3
/// significant digits, 21,504 counters of at most 9 bytes) stay far under it.
pub const MAX_HIST_BYTES: usize = 1024 * 1024;

/// Reads `path` whole if it is a regular file (never a FIFO, device, folder
/// or symbolic link, so a read can neither hang nor leave the folder) of at
/// most `cap` bytes; `what` names it in the error.
pub fn read_regular(path: &Path, cap: u64, what: &str) -> Result<Vec<u8>, String> {
    use std::io::Read as _;
    let shown = path.display();
    let not_regular = || {
        format!("{shown} is not a regular file: tminus reads a {what} only from a regular file (no FIFO, device, folder or symbolic link)")
    };
    let md = std::fs::symlink_metadata(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    if !md.is_file() {
        return Err(not_regular());
    }
    let mut open = std::fs::OpenOptions::new();
    open.read(true);
    #[cfg(unix)]
    {
        // Swapped for a FIFO or a link after the check: never block, never follow.
        use std::os::unix::fs::OpenOptionsExt as _;
        open.custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW);
    }
    let file = open
        .open(path)
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    let md = file
        .metadata()
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if !md.is_file() {
        return Err(not_regular());
    }
    let too_large = || format!("{shown} is larger than {cap} bytes, the most a {what} may be");
    if md.len() > cap {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(md.len() as usize);
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if bytes.len() as u64 > cap {
        return Err(too_large());
    }
    Ok(bytes)
}

/// The cookies of HdrHistogram's V2 encoding, plain and deflated.
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
/// The V2 header: cookie, payload length, normalizing offset, significant
/// digits, lowest and highest value, integer-to-double ratio.
const V2_HEADER: usize = 40;

/// Decodes one serialised histogram after checking what it declares: the
/// compressed length against the bytes there are, the inflated size against
/// [`MAX_HIST_BYTES`], the payload length against the bytes inflated, and
/// the bounds against those tminus records with (1 µs to [`MAX_US`], 3
/// digits), so that nothing is allocated from a declared size alone.
pub fn decode_checked(bytes: &[u8]) -> Result<Histogram<u64>, String> {
    use std::io::Read as _;
    let be32 = |b: &[u8], at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
    };
    let be64 = |b: &[u8], at: usize| -> Option<u64> {
        Some(u64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
    };
    let inflated;
    let plain: &[u8] = match be32(bytes, 0) {
        Some(V2_COMPRESSED_COOKIE) => {
            let declared = be32(bytes, 4).ok_or("truncated histogram header")? as usize;
            let there = bytes.len().saturating_sub(8);
            if declared > there {
                return Err(format!(
                    "histogram declares {declared} compressed bytes but holds {there}"
                ));
            }
            let mut out = Vec::new();
            flate2::read::ZlibDecoder::new(&bytes[8..8 + declared])
                .take(MAX_HIST_BYTES as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| format!("histogram does not inflate: {e}"))?;
            if out.len() > MAX_HIST_BYTES {
                return Err(format!(
                    "histogram inflates to more than {MAX_HIST_BYTES} bytes"
                ));
            }
            inflated = out;
            &inflated
        }
        Some(V2_COOKIE) => bytes,
        Some(c) => return Err(format!("histogram cookie {c:#010x} is not HdrHistogram V2")),
        None => return Err("truncated histogram header".into()),
    };
    if be32(plain, 0) != Some(V2_COOKIE) || plain.len() < V2_HEADER {
        return Err("histogram has no V2 header".into());
    }
    let field = |at| be32(plain, at).unwrap_or_default();
    let payload = field(4) as usize;
    let there = plain.len() - V2_HEADER;
    if payload > there {
        return Err(format!(
            "histogram declares a payload of {payload} bytes but holds {there}"
        ));
    }
    let (digits, low, high) = (
        field(12),
        be64(plain, 16).unwrap_or_default(),
        be64(plain, 24).unwrap_or_default(),
    );
    if !(1..=3).contains(&digits) || low < 1 || high > MAX_US || high < 2 * low {
        return Err(format!(
            "histogram bounds {low}..{high} at {digits} significant digits; tminus records 1..{MAX_US} µs at 3"
        ));
    }
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(plain))
        .map_err(|e| format!("histogram does not decode: {e}"))
}

/// Reads every tagged interval of an interval log, exactly as written.
pub fn read_hlog(path: &Path) -> Result<Vec<Interval>, String> {
    let mut out = Vec::new();
    for_each_encoded(path, |e| {
        let hist = e.decode().map_err(|m| format!("{}: {m}", path.display()))?;
        out.push(Interval {
            tag: e.tag,
            start: e.start,
            len: e.len,
            hist,
        });
        Ok(())
    })?;
    Ok(out)
}

/// Calls `f` with every interval of an interval log, in file order, its
/// histogram still encoded; the file is read only if regular and at most
/// [`MAX_HLOG_BYTES`], and no instant may overflow.
pub fn for_each_encoded(
    path: &Path,
    mut f: impl FnMut(Encoded) -> Result<(), String>,
) -> Result<(), String> {
    use base64::Engine as _;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let shown = path.display();
    let bytes = read_regular(path, MAX_HLOG_BYTES, "histogram log")?;
    let mut base = SystemTime::UNIX_EPOCH;
    let mut n = 0usize;
    for (line, entry) in IntervalLogIterator::new(&bytes).enumerate() {
        let late = || {
            format!(
                "{shown}: entry {}: a time past what a clock can hold",
                line + 1
            )
        };
        match entry.map_err(|e| format!("{shown}: entry {}: {e:?}", line + 1))? {
            LogEntry::BaseTime(t) => {
                base = SystemTime::UNIX_EPOCH.checked_add(t).ok_or_else(late)?;
            }
            LogEntry::StartTime(_) => {}
            LogEntry::Interval(i) => {
                n += 1;
                let encoded = base64::engine::general_purpose::STANDARD
                    .decode(i.encoded_histogram())
                    .map_err(|e| format!("{shown}: interval {n}: {e}"))?;
                f(Encoded {
                    tag: i.tag().map(|t| t.as_str().to_owned()).unwrap_or_default(),
                    start: base.checked_add(i.start_timestamp()).ok_or_else(late)?,
                    len: i.duration(),
                    bytes: encoded,
                })?;
            }
        }
    }
    Ok(())
}
