//! The capacity search's decisions, apart from any sending (so the
//! simulation below drives the same code the check does): which rate to
//! try next, when a step's windows agree, and what the finished search may
//! say.
//!
//! The search brackets by doubling from `start` until a step fails (or the
//! ceiling passes), then bisects the bracket until its width is within the
//! resolution. Each step is a run of windows at one open-arrival rate; a
//! window is judged by the suite's thresholds with their chance bands
//! (`chance.rs`): a share inside the band is no verdict. A step's verdict
//! is two windows in a row that agree; a window the generator could not
//! hold (its pool bound it while the target's saturation is not shown, or
//! it dropped or delayed its sends) ends the search with a lower bound: the
//! rate was not delivered, so nothing above the last passing rate is known.
//! Only rates that were judged end up in a report: the bracket's ends are
//! a passing and a failing step, never an interpolation.

/// One window's verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum Window {
    /// Every threshold held, each outside its chance band.
    Pass,
    /// Some threshold was breached outside its chance band.
    Fail,
    /// Some threshold's share fell inside its chance band (and none failed).
    Inconclusive,
    /// The generator, not the target, limited the window (why).
    GeneratorBound(String),
}

/// One step's verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Pass,
    Fail,
    /// The windows never agreed twice in a row: this rate is in the knee's
    /// noisy zone.
    Undecided,
    GeneratorBound(String),
}

/// The most windows one step runs before it is undecided.
pub const MAX_WINDOWS: usize = 4;
/// Windows in a row that must agree.
pub const AGREEING: usize = 2;

/// The step's verdict from its windows so far; `None`: run another window.
pub fn step_verdict(windows: &[Window]) -> Option<Step> {
    if let Some(Window::GeneratorBound(why)) = windows.last() {
        return Some(Step::GeneratorBound(why.clone()));
    }
    if windows.len() >= AGREEING {
        let tail = &windows[windows.len() - AGREEING..];
        if tail.iter().all(|w| *w == Window::Pass) {
            return Some(Step::Pass);
        }
        if tail.iter().all(|w| *w == Window::Fail) {
            return Some(Step::Fail);
        }
    }
    // Two agreeing windows cannot come any more.
    (windows.len() >= MAX_WINDOWS).then_some(Step::Undecided)
}

/// How far a failing first step is halved before the search gives up.
pub const MAX_HALVINGS: u32 = 3;
/// The most steps one search runs.
pub const MAX_STEPS: usize = 14;

/// The search's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    pub start: f64,
    /// The rate ceiling: never tried above.
    pub ceiling: f64,
    /// Bisect until (hi - lo) / lo is at most this.
    pub resolution: f64,
}

/// What a finished search found.
#[derive(Debug, Clone, PartialEq)]
pub enum Finding {
    /// A passing rate `lo` and a failing rate `hi`; `resolved`: within the
    /// resolution (else the steps between were undecided, or the search hit
    /// its bound in steps or time).
    Knee { lo: f64, hi: f64, resolved: bool },
    /// The ceiling passed: capacity at least that.
    NotFound { ceiling: f64 },
    /// The generator could not hold `at`: capacity at least `lo` (None:
    /// no rate passed before).
    LowerBound {
        lo: Option<f64>,
        at: f64,
        why: String,
    },
    /// Every rate tried failed, down to `lowest`.
    Below { lowest: f64 },
    /// The search ended (its steps or its time) without a bracket: capacity
    /// at least `lo` (None: no step passed) and below `hi` (None: no step
    /// failed), the rates between undecided.
    Undecided {
        lo: Option<f64>,
        hi: Option<f64>,
        tried: Vec<f64>,
    },
}

/// The search's state: the steps so far.
#[derive(Debug, Clone)]
pub struct Search {
    pub settings: Settings,
    /// (rate, verdict), in the order run.
    pub steps: Vec<(f64, Step)>,
}

impl Search {
    pub fn new(settings: Settings) -> Self {
        Search {
            settings,
            steps: Vec::new(),
        }
    }

    pub fn record(&mut self, rate: f64, step: Step) {
        self.steps.push((rate, step));
    }

    /// The highest passing rate below the lowest failing one, and that
    /// failing rate.
    fn bracket(&self) -> (Option<f64>, Option<f64>) {
        let hi = self
            .steps
            .iter()
            .filter(|(_, s)| *s == Step::Fail)
            .map(|(r, _)| *r)
            .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.min(r))));
        let lo = self
            .steps
            .iter()
            .filter(|(r, s)| *s == Step::Pass && hi.is_none_or(|h| *r < h))
            .map(|(r, _)| *r)
            .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))));
        (lo, hi)
    }

    fn within(&self, lo: f64, hi: f64) -> bool {
        (hi - lo) / lo <= self.settings.resolution + 1e-9
    }

    /// The next rate to try; `None`: the search is over ([`Self::finding`]).
    pub fn next(&self) -> Option<f64> {
        if self.steps.len() >= MAX_STEPS
            || self
                .steps
                .iter()
                .any(|(_, s)| matches!(s, Step::GeneratorBound(_)))
        {
            return None;
        }
        let s = self.settings;
        let (lo, hi) = self.bracket();
        let tried = |r: f64| self.steps.iter().any(|(t, _)| (t - r).abs() < 1e-9);
        let top = self.steps.iter().map(|(r, _)| *r).reduce(f64::max);
        let bottom = self.steps.iter().map(|(r, _)| *r).reduce(f64::min);
        match (lo, hi) {
            // Doubling: from the start, then from the highest rate tried
            // (every step so far passed or was undecided).
            (_, None) => {
                if lo.is_some_and(|l| l >= s.ceiling - 1e-9) {
                    return None;
                }
                let next = top.map_or(s.start, |t| (t * 2.0).min(s.ceiling));
                (!tried(next)).then_some(next)
            }
            // The first steps failed: halving, down to start / 2^MAX_HALVINGS.
            (None, Some(_)) => {
                let lowest = s.start / f64::from(1u32 << MAX_HALVINGS);
                let next = bottom.unwrap_or(s.start) / 2.0;
                (next >= lowest - 1e-9 && !tried(next)).then_some(next)
            }
            (Some(lo), Some(hi)) => {
                if self.within(lo, hi) {
                    return None;
                }
                // Undecided rates inside the bracket split it: bisect the
                // widest piece still wider than the resolution.
                let mut cuts: Vec<f64> = self
                    .steps
                    .iter()
                    .filter(|(r, st)| *st == Step::Undecided && *r > lo && *r < hi)
                    .map(|(r, _)| *r)
                    .collect();
                cuts.push(lo);
                cuts.push(hi);
                cuts.sort_by(f64::total_cmp);
                cuts.windows(2)
                    .filter(|w| !self.within(w[0], w[1]))
                    .max_by(|a, b| (a[1] / a[0]).total_cmp(&(b[1] / b[0])))
                    .map(|w| (w[0] + w[1]) / 2.0)
                    .filter(|m| !tried(*m))
            }
        }
    }

    /// Whether the steps so far decide a declared capacity `need`: a rate
    /// at or above it passed (below any failing one), or one at or below it
    /// failed, each in two agreeing windows.
    pub fn decides(&self, need: f64) -> bool {
        let (lo, hi) = self.bracket();
        lo.is_some_and(|l| l >= need - 1e-9) || hi.is_some_and(|h| h <= need + 1e-9)
    }

    /// What the steps so far show.
    pub fn finding(&self) -> Finding {
        let (lo, hi) = self.bracket();
        if let Some((at, Step::GeneratorBound(why))) = self
            .steps
            .iter()
            .find(|(_, s)| matches!(s, Step::GeneratorBound(_)))
        {
            // A failure below the bound rate still brackets the knee.
            if let (Some(l), Some(h)) = (lo, hi) {
                if h < *at {
                    return Finding::Knee {
                        lo: l,
                        hi: h,
                        resolved: self.within(l, h),
                    };
                }
            }
            return Finding::LowerBound {
                lo,
                at: *at,
                why: why.clone(),
            };
        }
        match (lo, hi) {
            (Some(l), Some(h)) => Finding::Knee {
                lo: l,
                hi: h,
                resolved: self.within(l, h),
            },
            (Some(l), None) if l >= self.settings.ceiling - 1e-9 => {
                Finding::NotFound { ceiling: l }
            }
            (None, Some(h)) if self.next().is_none() => Finding::Below { lowest: h },
            _ => Finding::Undecided {
                lo,
                hi,
                tried: self.steps.iter().map(|(r, _)| *r).collect(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(start: f64, ceiling: f64) -> Settings {
        Settings {
            start,
            ceiling,
            resolution: 0.2,
        }
    }

    /// Drives a search against a target whose steps pass below `knee`.
    fn drive(s: Settings, verdict: impl Fn(f64) -> Step) -> (Search, Vec<f64>) {
        let mut search = Search::new(s);
        let mut tried = Vec::new();
        while let Some(r) = search.next() {
            tried.push(r);
            search.record(r, verdict(r));
        }
        (search, tried)
    }

    #[test]
    fn doubling_then_bisecting_brackets_the_knee() {
        let knee = |r: f64| if r < 80.0 { Step::Pass } else { Step::Fail };
        let (s, tried) = drive(settings(50.0, 400.0), knee);
        assert_eq!(tried, [50.0, 100.0, 75.0, 87.5]);
        assert_eq!(
            s.finding(),
            Finding::Knee {
                lo: 75.0,
                hi: 87.5,
                resolved: true
            }
        );
    }

    #[test]
    fn a_passing_ceiling_is_bound_not_found() {
        let (s, tried) = drive(settings(20.0, 50.0), |_| Step::Pass);
        assert_eq!(tried, [20.0, 40.0, 50.0]);
        assert_eq!(s.finding(), Finding::NotFound { ceiling: 50.0 });
    }

    #[test]
    fn a_generator_bound_step_gives_a_lower_bound() {
        let (s, tried) = drive(settings(20.0, 400.0), |r| {
            if r > 30.0 {
                Step::GeneratorBound("pool".into())
            } else {
                Step::Pass
            }
        });
        assert_eq!(tried, [20.0, 40.0]);
        assert_eq!(
            s.finding(),
            Finding::LowerBound {
                lo: Some(20.0),
                at: 40.0,
                why: "pool".into()
            }
        );
    }

    #[test]
    fn failing_everywhere_halves_then_says_below() {
        let (s, tried) = drive(settings(40.0, 400.0), |_| Step::Fail);
        assert_eq!(tried, [40.0, 20.0, 10.0, 5.0]);
        assert_eq!(s.finding(), Finding::Below { lowest: 5.0 });
    }

    /// Undecided rates are never a bound: the bracket stays between
    /// decided steps, and the search bisects around them.
    #[test]
    fn undecided_steps_split_the_bracket_but_never_end_it() {
        let (s, tried) = drive(settings(50.0, 400.0), |r| {
            if r < 70.0 {
                Step::Pass
            } else if r < 90.0 {
                Step::Undecided
            } else {
                Step::Fail
            }
        });
        let Finding::Knee { lo, hi, resolved } = s.finding() else {
            panic!("{:?}", s.finding())
        };
        assert!(lo < 70.0 && hi >= 90.0, "{lo}..{hi} after {tried:?}");
        assert!(!resolved, "{lo}..{hi}");
        assert!(tried.len() <= MAX_STEPS);
        let (s, _) = drive(settings(50.0, 400.0), |_| Step::Undecided);
        assert_eq!(
            s.finding(),
            Finding::Undecided {
                lo: None,
                hi: None,
                tried: vec![50.0, 100.0, 200.0, 400.0]
            }
        );
    }

    #[test]
    fn a_search_cut_short_keeps_the_failure_it_decided() {
        // 40/s and 20/s failed, 10/s undecided, then the time ran out: the
        // capacity is below 20/s, which decides a declared 40/s.
        let mut s = Search::new(settings(40.0, 40.0));
        s.record(40.0, Step::Fail);
        assert!(s.decides(40.0) && !s.decides(30.0));
        s.record(20.0, Step::Fail);
        s.record(10.0, Step::Undecided);
        assert_eq!(
            s.finding(),
            Finding::Undecided {
                lo: None,
                hi: Some(20.0),
                tried: vec![40.0, 20.0, 10.0]
            }
        );
        let mut s = Search::new(settings(20.0, 80.0));
        s.record(20.0, Step::Pass);
        assert!(s.decides(20.0) && !s.decides(40.0));
    }

    #[test]
    fn windows_must_agree_twice_in_a_row() {
        use Window::*;
        assert_eq!(step_verdict(&[Pass]), None);
        assert_eq!(step_verdict(&[Pass, Pass]), Some(Step::Pass));
        assert_eq!(step_verdict(&[Pass, Fail]), None);
        assert_eq!(step_verdict(&[Pass, Fail, Fail]), Some(Step::Fail));
        assert_eq!(
            step_verdict(&[Pass, Fail, Pass, Fail]),
            Some(Step::Undecided)
        );
        assert_eq!(step_verdict(&[Inconclusive, Inconclusive]), None);
        assert_eq!(
            step_verdict(&[Pass, GeneratorBound("x".into())]),
            Some(Step::GeneratorBound("x".into()))
        );
    }
}
