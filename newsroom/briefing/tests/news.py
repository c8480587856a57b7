"""A day of realistic news: several stories, each told by several outlets in
their own words, plus items that belong to no story. The expected grouping is
the `story` field: items sharing it are one event; None is an event alone."""

from __future__ import annotations

# Sources with a category of their own; the rest are placed by meaning.
SOURCE_CATEGORIES = {"Tech Current": "Science and technology", "Arts Review": "Culture"}

# (story, source, title, text, url)
NEWS: list[tuple[str | None, str, str, str, str]] = [
    # --- The Federal Reserve raises rates (four outlets) ---
    (
        "fed",
        "Wire One",
        "Federal Reserve raises interest rates by half a point",
        "The Federal Reserve raised its benchmark interest rate by half a percentage point "
        "on Wednesday, its largest increase this year, as Jerome Powell said inflation "
        "remained too high. Markets had expected a smaller move.",
        "https://wireone.example/economy/fed-raises-rates-half-point",
    ),
    (
        "fed",
        "Daily Ledger",
        "Fed hikes rates 50 basis points in bid to cool inflation",
        "The Fed lifted interest rates by 50 basis points, with chair Jerome Powell warning "
        "that inflation is still running well above target. It was the biggest rate hike "
        "of the year.",
        "https://ledger.example/markets/fed-hikes-50bp",
    ),
    (
        "fed",
        "Morning Post",
        "Powell's Fed delivers bigger rate increase than expected",
        "Jerome Powell and the Federal Reserve surprised markets with a half-point rise in "
        "interest rates, saying inflation had not cooled enough.",
        "https://morningpost.example/business/2026/powell-fed-rate-increase",
    ),
    (
        "fed",
        "Capital Times",
        "US central bank raises borrowing costs by half a percentage point",
        "America's central bank, the Federal Reserve, raised interest rates by half a "
        "percentage point and signalled more increases to bring down inflation.",
        "https://capitaltimes.example/fed-raises-borrowing-costs",
    ),
    # --- An earthquake in Japan (three outlets) ---
    (
        "quake",
        "Wire One",
        "Magnitude 7.1 earthquake strikes off northern Japan, tsunami warning issued",
        "A magnitude 7.1 earthquake struck off the coast of northern Japan on Tuesday, "
        "prompting a tsunami warning and the evacuation of coastal towns, the Japan "
        "Meteorological Agency said.",
        "https://wireone.example/world/japan-earthquake-tsunami-warning",
    ),
    (
        "quake",
        "Global Desk",
        "Strong quake hits Japan's northeast coast; residents told to flee tsunami",
        "A powerful 7.1 magnitude quake hit northeastern Japan, and residents of coastal "
        "towns were told to move to higher ground as a tsunami warning was issued.",
        "https://globaldesk.example/asia/strong-quake-japan-northeast",
    ),
    (
        "quake",
        "Morning Post",
        "Tsunami warning after 7.1 earthquake shakes northern Japan",
        "Japan issued a tsunami warning after a 7.1 earthquake shook its northern coast, "
        "with coastal towns evacuated and trains halted, officials said.",
        "https://morningpost.example/world/tsunami-warning-japan-earthquake",
    ),
    # --- The EU passes its AI law (three outlets) ---
    (
        "ai-act",
        "Tech Current",
        "European Parliament approves landmark artificial intelligence law",
        "The European Parliament approved the AI Act, the world's first comprehensive law "
        "regulating artificial intelligence, setting strict rules for high-risk AI systems "
        "used in the European Union.",
        "https://techcurrent.example/policy/eu-parliament-approves-ai-act",
    ),
    (
        "ai-act",
        "Global Desk",
        "EU lawmakers pass sweeping AI Act regulating artificial intelligence",
        "Lawmakers in the European Parliament passed the AI Act, sweeping rules for "
        "artificial intelligence that ban some uses and set obligations for high-risk "
        "systems across the European Union.",
        "https://globaldesk.example/europe/eu-lawmakers-pass-ai-act",
    ),
    (
        "ai-act",
        "Daily Ledger",
        "Europe adopts world's first comprehensive rules for artificial intelligence",
        "The European Union adopted the AI Act, the first comprehensive rules for "
        "artificial intelligence, after the European Parliament voted in favour.",
        "https://ledger.example/tech/europe-adopts-ai-rules",
    ),
    # --- Wildfires in Greece (three outlets) ---
    (
        "fires",
        "Global Desk",
        "Wildfires near Athens force thousands to evacuate",
        "Wildfires raging near Athens forced thousands of people to evacuate their homes "
        "as strong winds fanned the flames, Greece's fire service said.",
        "https://globaldesk.example/europe/wildfires-athens-evacuate",
    ),
    (
        "fires",
        "Wire One",
        "Greece battles wildfires as blazes spread towards Athens suburbs",
        "Firefighters in Greece battled wildfires spreading towards the suburbs of Athens, "
        "and thousands of residents were evacuated as winds fanned the blazes.",
        "https://wireone.example/world/greece-wildfires-athens-suburbs",
    ),
    (
        "fires",
        "Morning Post",
        "Thousands flee as wildfires rage on outskirts of Athens",
        "Thousands of people fled their homes as wildfires raged on the outskirts of "
        "Athens, with Greece asking the European Union for firefighting planes.",
        "https://morningpost.example/world/thousands-flee-wildfires-athens",
    ),
    # --- NASA's asteroid sample (three outlets) ---
    (
        "nasa",
        "Tech Current",
        "NASA capsule returns asteroid sample to Earth",
        "A NASA capsule carrying a sample of the asteroid Bennu landed in the Utah desert "
        "on Sunday, ending a seven-year mission, scientists said.",
        "https://techcurrent.example/space/nasa-capsule-asteroid-sample",
    ),
    (
        "nasa",
        "Science Weekly",
        "Asteroid sample from Bennu lands in Utah desert after seven-year mission",
        "NASA's sample of the asteroid Bennu touched down in the Utah desert, where "
        "scientists recovered the capsule after a seven-year mission.",
        "https://scienceweekly.example/nasa-bennu-sample-lands",
    ),
    (
        "nasa",
        "Global Desk",
        "Scientists recover NASA capsule holding asteroid Bennu sample",
        "Scientists recovered a NASA capsule holding rocks and dust from the asteroid "
        "Bennu after it landed in the Utah desert.",
        "https://globaldesk.example/science/nasa-bennu-capsule",
    ),
    # --- The French government falls (three outlets) ---
    (
        "france",
        "Global Desk",
        "French government collapses after losing no-confidence vote",
        "France's government collapsed on Wednesday after lawmakers in the National "
        "Assembly backed a no-confidence motion against the prime minister over the "
        "budget.",
        "https://globaldesk.example/europe/french-government-collapses",
    ),
    (
        "france",
        "Wire One",
        "France's prime minister ousted in no-confidence vote over budget",
        "The National Assembly voted to oust France's prime minister in a no-confidence "
        "motion over the budget, bringing down the government.",
        "https://wireone.example/world/france-pm-ousted-no-confidence",
    ),
    (
        "france",
        "Daily Ledger",
        "National Assembly topples French government in budget no-confidence motion",
        "The French government fell after the National Assembly passed a no-confidence "
        "motion over the budget, deepening the political crisis in France.",
        "https://ledger.example/world/french-government-toppled",
    ),
    # --- A film wins at Cannes (two outlets) ---
    (
        "cannes",
        "Arts Review",
        "Quiet family drama wins the Palme d'Or at Cannes",
        "A quiet family drama won the Palme d'Or at the Cannes Film Festival on Saturday, "
        "the festival's top prize, surprising critics.",
        "https://artsreview.example/film/palme-dor-family-drama",
    ),
    (
        "cannes",
        "Morning Post",
        "Cannes Film Festival awards Palme d'Or to understated family drama",
        "The Cannes Film Festival awarded its Palme d'Or to an understated family drama, "
        "a surprise choice for the top prize.",
        "https://morningpost.example/culture/cannes-palme-dor",
    ),
    # --- Items that are no one else's story ---
    (
        None,
        "Daily Ledger",
        "European Central Bank holds interest rates steady",
        "The European Central Bank left interest rates unchanged on Thursday, saying "
        "inflation in the euro area was easing, in contrast with the Federal Reserve.",
        "https://ledger.example/markets/ecb-holds-rates",
    ),
    (
        None,
        "Capital Times",
        "Tokyo stocks slide after earthquake rattles Japan",
        "Shares in Tokyo fell on Tuesday as investors weighed the damage from the "
        "earthquake in Japan; the Nikkei closed down two percent.",
        "https://capitaltimes.example/markets/tokyo-stocks-earthquake",
    ),
    (
        None,
        "Arts Review",
        "City library extends weekend opening hours",
        "The central library will open on Sundays from next month after a campaign by "
        "readers, the council said.",
        "https://artsreview.example/local/library-opening-hours",
    ),
    (
        None,
        "Science Weekly",
        "Study links daily walks to lower risk of heart disease",
        "People who walk for thirty minutes a day have a markedly lower risk of heart "
        "disease, according to a study of 80,000 adults published on Monday.",
        "https://scienceweekly.example/health/daily-walks-heart",
    ),
    (
        None,
        "Tech Current",
        "Apple unveils new iPhone with faster chip and longer battery life",
        "Apple unveiled a new iPhone with a faster chip and a battery that lasts longer, "
        "and said it would go on sale next week.",
        "https://techcurrent.example/gadgets/apple-new-iphone",
    ),
]

# The grouping the briefing must find: these stories, each one event holding
# exactly its items; every item with story None is an event of its own.
EXPECTED_STORIES = {
    "fed": 4,
    "quake": 3,
    "ai-act": 3,
    "fires": 3,
    "nasa": 3,
    "france": 3,
    "cannes": 2,
}
EXPECTED_EVENTS = len(EXPECTED_STORIES) + 5

# The category each story must land in (by source, else by meaning).
EXPECTED_CATEGORY = {
    "fed": "Economics",
    "quake": "World",
    "fires": "World",
    "nasa": "Science and technology",
    "france": "Politics",
    "cannes": "Culture",
}

# Connections that must appear, and a name the label must carry.
EXPECTED_EDGES = [
    ("quake", "Tokyo stocks slide after earthquake rattles Japan", "Japan"),
    ("fed", "European Central Bank holds interest rates steady", "Federal Reserve"),
]
