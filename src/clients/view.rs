//! What the gate reads of one client: the numbers rule conditions test.

/// A copy of one client's numbers over the window, taken under the
/// bucket's lock: reading it needs no lock and sees no later update.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ClientView {
    /// The memory held this client before the call (false: a new client,
    /// or one evicted or aged out of memory).
    pub known: bool,
    /// Navigations in the window.
    pub navigations: u32,
    /// Of those, the ones that arrived from nowhere (typed, bookmarked, or
    /// a script's copied head) rather than from a link
    /// ([`arrival`](super::arrival)).
    pub direct_navigations: u32,
    /// Sub-resource fetches in the window, per class in
    /// [`Fetch`](super::Fetch) order after the navigation (style, script,
    /// image, font, api, other).
    pub subresources_by_class: [u32; 6],
    /// Distinct paths navigated to in the window (a linear-counting
    /// estimate, [`PathSketch`](super::PathSketch)).
    pub paths: u32,
    /// Answers that set the memory's cookie, in the window.
    pub cookies_issued: u32,
    /// Requests that sent that cookie back, in the window.
    pub cookies_returned: u32,
    /// Challenges served, solved and failed, in the window.
    pub challenges_served: u32,
    /// Challenges solved in the window.
    pub challenges_solved: u32,
    /// Challenges failed in the window.
    pub challenges_failed: u32,
    /// When the memory first saw this client, in whole seconds since the
    /// Unix epoch (0: never).
    pub first_seen_s: u32,
    /// The last request's time, milliseconds since the Unix epoch.
    pub last_seen_ms: u64,
    /// Gaps between navigations measured so far (saturates).
    pub gaps: u32,
    /// The gaps' exponentially weighted mean, milliseconds.
    pub gap_mean_ms: f32,
    /// The gaps' exponentially weighted standard deviation, milliseconds.
    pub gap_sd_ms: f32,
    /// Requests per second over the part of the window the client was
    /// seen in (at least one second).
    pub rate: f32,
}

impl ClientView {
    /// Sub-resource fetches in the window, every class.
    pub fn subresources(&self) -> u32 {
        self.subresources_by_class
            .iter()
            .fold(0u32, |a, &n| a.saturating_add(n))
    }

    /// Requests in the window: navigations and sub-resources.
    pub fn requests(&self) -> u32 {
        self.navigations.saturating_add(self.subresources())
    }

    /// The share of the window's requests that were sub-resources, 0 to 1
    /// (0 with no request): near 0 for a crawler that fetches documents
    /// only, most of a browser's requests otherwise.
    pub fn subresource_ratio(&self) -> f32 {
        match self.requests() {
            0 => 0.0,
            n => self.subresources() as f32 / n as f32,
        }
    }

    /// The share of the window's navigations that arrived from nowhere, 0
    /// to 1 (0 with no navigation): one per visit for a person who clicks
    /// through a site, every one for a crawler that copied the head of a
    /// typed URL.
    pub fn direct_ratio(&self) -> f32 {
        match self.navigations {
            0 => 0.0,
            n => self.direct_navigations.min(n) as f32 / n as f32,
        }
    }

    /// Whether most of the window's navigations (more than half) arrived
    /// from a link. Monotone: one more navigation from nowhere never makes
    /// it true.
    pub fn mostly_linked(&self) -> bool {
        u64::from(self.direct_navigations) * 2 < u64::from(self.navigations)
    }

    /// Whether the client sent back a cookie the memory's answers set.
    pub fn cookie_returned(&self) -> bool {
        self.cookies_returned > 0
    }

    /// The gaps' coefficient of variation (standard deviation over mean):
    /// near 0 for a crawler's steady clock, near or above 1 for a person.
    /// 0 before two gaps.
    pub fn gap_cv(&self) -> f32 {
        if self.gaps < 2 || self.gap_mean_ms <= 0.0 {
            0.0
        } else {
            self.gap_sd_ms / self.gap_mean_ms
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_numbers() {
        let crawler = ClientView {
            navigations: 30,
            ..ClientView::default()
        };
        let browser = ClientView {
            navigations: 3,
            subresources_by_class: [6, 9, 12, 0, 0, 0],
            cookies_returned: 2,
            gaps: 2,
            gap_mean_ms: 20_000.0,
            gap_sd_ms: 30_000.0,
            ..ClientView::default()
        };
        assert_eq!(crawler.subresource_ratio(), 0.0);
        assert!(!crawler.cookie_returned());
        assert_eq!(browser.subresources(), 27);
        assert_eq!(browser.requests(), 30);
        assert!((browser.subresource_ratio() - 0.9).abs() < 1e-6);
        assert!(browser.cookie_returned());
        assert!((browser.gap_cv() - 1.5).abs() < 1e-6);
        // A visit: typed once, then links; a copied typed-URL head: every
        // page from nowhere.
        let visit = ClientView {
            navigations: 10,
            direct_navigations: 1,
            ..ClientView::default()
        };
        assert!((visit.direct_ratio() - 0.1).abs() < 1e-6 && visit.mostly_linked());
        assert_eq!(crawler.direct_ratio(), 0.0);
        let copied = ClientView {
            direct_navigations: 30,
            ..crawler
        };
        assert_eq!(
            (copied.direct_ratio(), copied.mostly_linked()),
            (1.0, false)
        );
        // Half and half is not "mostly".
        let half = ClientView {
            navigations: 10,
            direct_navigations: 5,
            ..ClientView::default()
        };
        assert!(!half.mostly_linked() && !ClientView::default().mostly_linked());
        assert_eq!(ClientView::default().direct_ratio(), 0.0);
        assert_eq!(ClientView::default().subresource_ratio(), 0.0);
        assert_eq!(ClientView::default().gap_cv(), 0.0);
        let full = ClientView {
            navigations: u32::MAX,
            subresources_by_class: [u32::MAX; 6],
            ..ClientView::default()
        };
        assert_eq!(full.requests(), u32::MAX);
    }
}
