//! `tminus compare --calibrate A1 A2`: two runs of the same release show
//! how far two runs differ on this machine, network and target when
//! nothing changed. Each measure's observed change (the log ratio for
//! percentiles and throughput, the difference for rates) is recorded as
//! its noise band in `A1/tminus-noise.json`; a later comparison with A1
//! (as the baseline, or as the run) adds the band to the measure's
//! interval, in quadrature, and says so.
//!
//! The file is read like every other file of a folder: regular, at most
//! [`MAX_BYTES`], unknown fields refused, every name and band checked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::read::shown_name;
use super::stats::Change;
use super::threshold::{pct, Measure};
use super::Comparison;

/// The noise band's file, in the folder of the first run.
pub const FILE: &str = "tminus-noise.json";
/// Largest noise file read.
pub const MAX_BYTES: u64 = 1024 * 1024;
/// Most bands one file may hold.
pub const MAX_BANDS: usize = 20_000;
/// Largest band: a log ratio of ln 100 (×100), or a whole share.
const MAX_RATIO_BAND: f64 = 4.605_170_185_988_092;
const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct NoiseFile {
    version: u32,
    /// The two folders calibrated, as given.
    runs: [String; 2],
    bands: Vec<BandEntry>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BandEntry {
    /// `suite/load`.
    burst: String,
    /// A request kind; `null`: all requests.
    kind: Option<String>,
    /// The row's label: `p95`, `raw p99`, `throughput`, `error rate`, `429 rate`.
    measure: String,
    /// The observed change's size: |ln ratio| or |difference|.
    band: f64,
}

/// A band's key: burst, request kind (`None`: all requests), measure label.
type Key = (String, Option<String>, String);

/// The bands a comparison adds, by (burst, kind, measure label), with
/// where they came from.
#[derive(Default)]
pub struct Bands {
    bands: BTreeMap<Key, f64>,
    pub sources: Vec<PathBuf>,
}

impl Bands {
    pub fn get(&self, burst: &str, kind: Option<&String>, m: Measure) -> f64 {
        self.bands
            .get(&(burst.to_owned(), kind.cloned(), m.label()))
            .copied()
            .unwrap_or(0.0)
    }

    /// The bands of `dir`'s noise file, if it has one, added to these
    /// (the larger band wins: either folder's calibration counts, so the
    /// order of the arguments does not matter).
    pub fn add_folder(&mut self, dir: &Path) -> Result<(), String> {
        let path = dir.join(FILE);
        if std::fs::symlink_metadata(&path).is_err() {
            return Ok(());
        }
        for ((b, k, m), band) in read(&path)? {
            let slot = self.bands.entry((b, k, m)).or_default();
            *slot = slot.max(band);
        }
        self.sources.push(path);
        Ok(())
    }
}

/// Reads and checks a noise file.
fn read(path: &Path) -> Result<Vec<(Key, f64)>, String> {
    let shown = path.display();
    let bytes = crate::families::load::stats::read_regular(path, MAX_BYTES, "noise band file")?;
    let f: NoiseFile = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{shown} is not a tminus noise band file: {e}"))?;
    if f.version != VERSION {
        return Err(format!(
            "{shown}: version {}, this tminus reads version {VERSION}",
            f.version
        ));
    }
    if f.bands.len() > MAX_BANDS {
        return Err(format!(
            "{shown}: {} bands, more than the {MAX_BANDS} compare reads",
            f.bands.len()
        ));
    }
    let name_ok = |s: &str| {
        !s.is_empty()
            && s.len() <= super::read::MAX_NAME * 2 + 1
            && !s.chars().any(char::is_control)
    };
    let mut out = Vec::with_capacity(f.bands.len());
    for (i, b) in f.bands.into_iter().enumerate() {
        let at = |what: String| format!("{shown}: band {}: {what}", i + 1);
        if !name_ok(&b.burst) || !b.kind.as_deref().is_none_or(name_ok) {
            return Err(at("a burst or kind name that no folder can hold".into()));
        }
        let measure = Measure::from_label(&b.measure)
            .ok_or_else(|| at(format!("unknown measure `{}`", shown_name(&b.measure))))?;
        let max = match measure {
            Measure::ErrorRate | Measure::Rate429 => 1.0,
            _ => MAX_RATIO_BAND,
        };
        if !b.band.is_finite() || b.band < 0.0 || b.band > max {
            return Err(at(format!("band {} is not within 0..={max}", b.band)));
        }
        out.push(((b.burst, b.kind, measure.label()), b.band));
    }
    Ok(out)
}

/// The bands of an A/A comparison: every measure that could be compared.
pub fn bands_of(c: &Comparison) -> Vec<(String, Option<String>, Measure, f64)> {
    let mut out = Vec::new();
    for b in &c.bursts {
        for g in &b.groups {
            for row in &g.rows {
                let Change::Known(e) = &row.change else {
                    continue;
                };
                let band = match row.measure {
                    Measure::ErrorRate | Measure::Rate429 => e.value.abs(),
                    _ => e.value.max(1e-300).ln().abs(),
                };
                out.push((b.id.clone(), g.kind.clone(), row.measure, band));
            }
        }
    }
    out
}

/// Writes the bands of `c` (A1 against A2) into A1; the lines to print.
pub fn write(c: &Comparison) -> Result<(PathBuf, String), String> {
    let bands = bands_of(c);
    let file = NoiseFile {
        version: VERSION,
        runs: [
            c.baseline_dir.display().to_string(),
            c.run_dir.display().to_string(),
        ],
        bands: bands
            .iter()
            .map(|(burst, kind, m, band)| BandEntry {
                burst: burst.clone(),
                kind: kind.clone(),
                measure: m.label(),
                band: band.min(MAX_RATIO_BAND),
            })
            .collect(),
    };
    let path = c.baseline_dir.join(FILE);
    let json = serde_json::to_vec_pretty(&file).map_err(|e| e.to_string())?;
    crate::files::write_atomic(&path, &json)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let mut text = String::new();
    for (burst, kind, m, band) in &bands {
        let shown = match m {
            Measure::ErrorRate | Measure::Rate429 => format!("±{:.2} pp", band * 100.0),
            _ => format!("±{}", pct(band.exp() - 1.0).trim_start_matches('+')),
        };
        text.push_str(&format!(
            "  {} · {} · {}: {shown}\n",
            shown_name(burst),
            kind.as_deref()
                .map_or("all requests".to_owned(), |k| format!(
                    "`{}`",
                    shown_name(k)
                )),
            m.label()
        ));
    }
    Ok((path, text))
}
