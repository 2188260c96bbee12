//! What kind of client a verified bot is, so that a rule can treat AI
//! crawlers differently from search engines (`docs/rules.md`).

use std::fmt;

/// A verified bot's category, as the `verified_bots` file names it.
///
/// The categories follow what the vendors themselves say a client does
/// (OpenAI: GPTBot collects training data, OAI-SearchBot builds a search
/// index, ChatGPT-User fetches a page a person asked about), because
/// that is what a site owner decides on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    /// A search engine's index crawler (Googlebot, bingbot, DuckDuckBot,
    /// Applebot, OAI-SearchBot, PerplexityBot). A file's bots without a
    /// category are this: the file format had only search crawlers before.
    Search,
    /// A crawler collecting content to train AI models (GPTBot, CCBot).
    AiCrawler,
    /// A fetch an AI assistant makes because a person asked about a page
    /// (ChatGPT-User, Perplexity-User, DuckAssistBot).
    AiAssistant,
    /// A link preview ("unfurl") fetcher (TelegramBot).
    Preview,
    /// A feed fetcher (FeedFetcher-Google).
    Feed,
    /// An uptime monitor (UptimeRobot, Pingdom).
    Monitor,
    /// A web archive's crawler.
    Archive,
    /// A service delivering webhooks (GitHub, Stripe).
    Webhook,
    /// Verified, and none of the above (Google's AdsBot, Site Verifier).
    Other,
}

impl Category {
    /// Every category, in the order of their bits. (A function, not an
    /// associated constant: cbindgen would take the type into the C
    /// header for one.)
    pub fn all() -> [Category; 9] {
        [
            Category::Search,
            Category::AiCrawler,
            Category::AiAssistant,
            Category::Preview,
            Category::Feed,
            Category::Monitor,
            Category::Archive,
            Category::Webhook,
            Category::Other,
        ]
    }

    /// The name in files and logs (`"ai-crawler"`).
    pub fn name(self) -> &'static str {
        match self {
            Category::Search => "search",
            Category::AiCrawler => "ai-crawler",
            Category::AiAssistant => "ai-assistant",
            Category::Preview => "preview",
            Category::Feed => "feed",
            Category::Monitor => "monitor",
            Category::Archive => "archive",
            Category::Webhook => "webhook",
            Category::Other => "other",
        }
    }

    /// The category named `name` (exactly as [`Category::name`] spells it).
    pub fn parse(name: &str) -> Option<Category> {
        Category::all().into_iter().find(|c| c.name() == name)
    }

    /// One bit per category, for sets of them.
    pub fn bit(self) -> u16 {
        1 << (self as u16)
    }

    /// The names, for error messages (`search, ai-crawler, ...`).
    pub fn names() -> String {
        Category::all().map(Category::name).join(", ")
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bits_are_distinct() {
        let mut bits = 0u16;
        for c in Category::all() {
            assert_eq!(Category::parse(c.name()), Some(c));
            assert_eq!(bits & c.bit(), 0);
            bits |= c.bit();
        }
        for bad in ["", "Search", "ai_crawler", "ai", "bot"] {
            assert_eq!(Category::parse(bad), None, "{bad}");
        }
        assert!(Category::names().starts_with("search, ai-crawler, "));
    }
}
