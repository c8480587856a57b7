"""Benchmark: write the briefing of a day with 2,000 items.

    .venv/bin/python bench/briefing.py [--items 2000]

Builds a throwaway SQLite database (NEWSROOM_DATA_DIR in a temp folder) with
one reader, 60 sources and N items: many stories told by several sources in
their own words plus stories only one source carries. Then it times
write_briefing with the built-in analyst (embedder loaded beforehand, so
brief_s is the steady-state cost) and the embedding rate. The baseline is the
same write_briefing with all_pairs=True: every pair of items scored one at a
time, the way a clustering without an index works; pairwise_ratio = brief_s /
baseline brief_s. Earlier lines give the clustering alone both ways, one
all-pairs matrix product (fast at 2,000 but quadratic in memory and time), the
LSH recall against the exact pairs, and how LSH clustering grows with n.
Last line: items=… events=… brief_s=… embed_items_per_s=… pairwise_ratio=…
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PEOPLE_UNUSED = [
    "Maria Lopez",
    "Daniel Weber",
    "Aiko Tanaka",
    "Samuel Okafor",
    "Elena Petrova",
    "James Carter",
    "Priya Raman",
    "Lucas Moreau",
    "Fatima Haddad",
    "Oliver Grant",
    "Chen Wei",
    "Sofia Rossi",
    "Kwame Mensah",
    "Anna Kowalski",
    "Diego Herrera",
    "Hannah Schmidt",
    "Yusuf Demir",
    "Laura Jensen",
]
PLACES = [
    "France",
    "Germany",
    "Japan",
    "Brazil",
    "India",
    "Kenya",
    "Canada",
    "Mexico",
    "Spain",
    "Italy",
    "Poland",
    "Egypt",
    "Turkey",
    "Australia",
    "Indonesia",
    "Nigeria",
    "Chile",
    "Sweden",
    "Vietnam",
    "Argentina",
    "Greece",
    "Portugal",
    "Norway",
    "Peru",
    "Thailand",
    "Morocco",
    "Ukraine",
    "Ireland",
]
ORGS = [
    "European Union",
    "United Nations",
    "World Bank",
    "International Monetary Fund",
    "NATO",
    "World Health Organization",
    "OPEC",
    "European Central Bank",
    "Federal Reserve",
    "G20",
]
COMPANIES = [
    "Northwind Motors",
    "Helios Energy",
    "Vertex Systems",
    "BluePeak Airlines",
    "Orion Pharma",
    "Cobalt Mining Group",
    "Summit Bank",
    "Nimbus Software",
    "Atlas Foods",
    "Quantum Rail",
]
THINGS = [
    "budget",
    "pension reform",
    "trade deal",
    "climate plan",
    "tax package",
    "housing law",
    "energy strategy",
    "health bill",
    "migration pact",
    "digital services law",
]
SCIENCE = [
    "malaria vaccine",
    "fusion reactor",
    "Mars rover",
    "deep-sea species",
    "battery chemistry",
    "quantum processor",
    "gene therapy",
    "exoplanet",
    "coral reef survey",
    "Alzheimer's drug",
]
CULTURE = [
    "film festival",
    "art exhibition",
    "music award",
    "book prize",
    "opera season",
    "football final",
    "design biennale",
    "theatre revival",
    "photography prize",
    "jazz festival",
]

# Families of stories; each has several ways to title and tell the same facts.
FAMILIES = [
    (
        "Politics",
        [
            "{place} parliament passes {thing} after long debate",
            "Lawmakers in {place} approve {thing} in late-night vote",
            "{place} adopts {thing} despite opposition protests",
            "Vote clears way for {place}'s {thing}",
        ],
        [
            "Lawmakers in {place} voted {n} to {m} to pass the {thing}, which {person} called a turning point.",
            "The {thing} cleared parliament in {place} by {n} votes to {m}; {person} said it would take effect next year.",
            "{person} won backing for the {thing} in {place}, where parliament approved it with {n} votes.",
        ],
    ),
    (
        "Politics",
        [
            "{person} resigns as {place} minister amid scandal",
            "{place} minister {person} steps down over funding row",
            "Scandal forces {person} out of {place} government",
            "{person} quits {place} cabinet after inquiry",
        ],
        [
            "{person} resigned from the government of {place} after an inquiry into party funding, officials said.",
            "Under pressure over a funding scandal, {person} stepped down from the cabinet in {place}.",
            "The government of {place} lost {person}, who quit after investigators questioned party donations.",
        ],
    ),
    (
        "Economics",
        [
            "{org} warns of slower growth in {place}",
            "Growth in {place} to slow, says {org}",
            "{org} cuts {place} growth forecast to {n}%",
            "{place} economy faces slowdown, {org} report finds",
        ],
        [
            "The {org} lowered its growth forecast for {place} to {n} percent, citing weak exports and high borrowing costs.",
            "{place} will grow only {n} percent this year, the {org} said, warning that exports are weakening.",
            "In a report, the {org} said growth in {place} would slow to {n} percent as borrowing costs bite.",
        ],
    ),
    (
        "Economics",
        [
            "{company} shares jump after record profit",
            "{company} posts record quarterly profit, stock soars",
            "Record earnings send {company} stock higher",
            "{company} profit beats forecasts",
        ],
        [
            "Shares in {company} rose {n} percent after the company reported a record quarterly profit.",
            "{company} said profit reached a record in the quarter, and its stock climbed {n} percent.",
            "Investors sent {company} shares up {n} percent after earnings beat analysts' forecasts.",
        ],
    ),
    (
        "Economics",
        [
            "{company} to cut {n}00 jobs in {place}",
            "{company} announces {n}00 job cuts at {place} plants",
            "Hundreds of jobs to go at {company} in {place}",
            "{company} plans layoffs in {place}",
        ],
        [
            "{company} will cut {n}00 jobs in {place} as demand falls, the company said on Tuesday.",
            "The company {company} said it would shed {n}00 jobs at its plants in {place}.",
            "Workers at {company} in {place} learned that {n}00 jobs would go by next year.",
        ],
    ),
    (
        "Science and technology",
        [
            "Scientists report breakthrough on {science}",
            "Researchers in {place} unveil {science} results",
            "New study hails progress on {science}",
            "{science}: team led by {person} reports key advance",
        ],
        [
            "A team led by {person} in {place} reported a breakthrough on the {science}, publishing results on Monday.",
            "Researchers said the {science} work, led by {person}, could change the field within {n} years.",
            "The study on the {science}, from scientists in {place}, was published in a leading journal.",
        ],
    ),
    (
        "Science and technology",
        [
            "{company} unveils new AI assistant",
            "{company} launches artificial intelligence tool for businesses",
            "AI push: {company} reveals assistant for offices",
            "{company} bets on AI with new product",
        ],
        [
            "{company} unveiled an artificial intelligence assistant for businesses, priced from {n} dollars a month.",
            "The new AI tool from {company} will reach customers in {place} first, the company said.",
            "{company} said its assistant uses artificial intelligence to draft documents and answer questions.",
        ],
    ),
    (
        "World",
        [
            "Earthquake of magnitude {n}.{m} strikes {place}",
            "Strong quake hits {place}, buildings damaged",
            "{place} shaken by {n}.{m} earthquake",
            "Rescuers search rubble after {place} earthquake",
        ],
        [
            "An earthquake of magnitude {n}.{m} struck {place} on Tuesday, damaging buildings and cutting power.",
            "Rescuers in {place} searched collapsed buildings after a {n}.{m} magnitude quake.",
            "The quake in {place} measured {n}.{m} and was felt hundreds of kilometres away, officials said.",
        ],
    ),
    (
        "World",
        [
            "Floods force thousands from homes in {place}",
            "Heavy rain floods towns across {place}",
            "{place} floods: thousands evacuated",
            "Rivers burst banks in {place} after days of rain",
        ],
        [
            "Floods forced thousands of people from their homes in {place} after days of heavy rain.",
            "Rivers burst their banks across {place}, and authorities evacuated {n} thousand residents.",
            "Heavy rain flooded towns in {place}; {n} thousand people were moved to shelters.",
        ],
    ),
    (
        "World",
        [
            "{place} and {place2} sign peace accord",
            "Leaders of {place} and {place2} agree ceasefire deal",
            "{place}-{place2} truce agreed after talks",
            "Accord ends fighting between {place} and {place2}",
        ],
        [
            "Leaders of {place} and {place2} signed an accord ending months of fighting, with {org} as witness.",
            "{place} and {place2} agreed a ceasefire after talks hosted by the {org}.",
            "The truce between {place} and {place2} was signed after {n} days of negotiations.",
        ],
    ),
    (
        "Culture",
        [
            "{person} wins top prize at {culture}",
            "{culture} honours {person}",
            "{person} takes main award at {culture} in {place}",
            "Surprise win for {person} at {culture}",
        ],
        [
            "{person} won the top prize at the {culture} in {place}, a surprise choice for the jury.",
            "The {culture} in {place} gave its main award to {person} on Saturday.",
            "Critics praised the jury of the {culture} for honouring {person}.",
        ],
    ),
    (
        "Culture",
        [
            "{culture} in {place} draws record crowds",
            "Record attendance at {place}'s {culture}",
            "Crowds flock to {culture} in {place}",
            "{place} {culture} breaks visitor record",
        ],
        [
            "The {culture} in {place} drew a record {n}0,000 visitors, organisers said.",
            "Organisers of the {culture} said attendance in {place} reached a record.",
            "Visitors packed the {culture} in {place}, beating last year's record by {n} percent.",
        ],
    ),
]


SYLLABLES = [
    "va",
    "lo",
    "ren",
    "ka",
    "mi",
    "tor",
    "sa",
    "bel",
    "du",
    "ni",
    "gra",
    "po",
    "zel",
    "an",
    "ri",
    "mon",
    "te",
    "qua",
    "shi",
    "lu",
    "dor",
    "ve",
    "ha",
    "xin",
]
FIRST = [
    "Maria",
    "Daniel",
    "Aiko",
    "Samuel",
    "Elena",
    "James",
    "Priya",
    "Lucas",
    "Fatima",
    "Oliver",
    "Chen",
    "Sofia",
    "Kwame",
    "Anna",
    "Diego",
    "Hannah",
    "Yusuf",
    "Laura",
    "Ivan",
    "Amara",
]
LAST = [
    "Lopez",
    "Weber",
    "Tanaka",
    "Okafor",
    "Petrova",
    "Carter",
    "Raman",
    "Moreau",
    "Haddad",
    "Grant",
    "Wei",
    "Rossi",
    "Mensah",
    "Kowalski",
    "Herrera",
    "Schmidt",
    "Demir",
    "Jensen",
    "Novak",
    "Silva",
    "Kim",
    "Larsen",
    "Nguyen",
    "Costa",
]


def _town(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()


def generate(n_items: int, seed: int = 7) -> list[dict]:
    """Items of one day: stories of 1-9 reports from different sources. Each
    story has its own town, person and numbers, as real stories have their
    own names; the wording varies by outlet."""
    rng = random.Random(seed)
    sources = [f"Outlet {k:02d}" for k in range(60)]
    items: list[dict] = []
    story = 0
    while len(items) < n_items:
        story += 1
        category, titles, texts = FAMILIES[rng.randrange(len(FAMILIES))]
        slots = {
            "place": rng.choice(PLACES),
            "place2": rng.choice(PLACES),
            "person": f"{rng.choice(FIRST)} {rng.choice(LAST)}",
            "town": _town(rng),
            "org": rng.choice(ORGS),
            "company": rng.choice(COMPANIES),
            "thing": rng.choice(THINGS),
            "science": rng.choice(SCIENCE),
            "culture": rng.choice(CULTURE),
            "n": rng.randint(2, 9),
            "m": rng.randint(1, 9),
        }
        reports = min(9, 1 + int(rng.expovariate(0.45)))
        for source in rng.sample(sources, reports):
            if len(items) >= n_items:
                break
            title = rng.choice(titles).format(**slots)
            where = rng.choice(
                [
                    "The events in {town} drew wide attention.",
                    "Officials in {town} confirmed the details.",
                    "Residents of {town} followed the news closely.",
                ]
            )
            text = " ".join([*rng.sample(texts, 2), where]).format(**slots)
            if rng.random() < 0.5:
                title = f"{title} ({slots['town']})"
            items.append(
                {
                    "story": story,
                    "source": source,
                    "title": title,
                    "text": text,
                    "url": f"https://{source.lower().replace(' ', '')}.example/{story}/{len(items)}",
                }
            )
    return items


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="print where write_briefing spends its time",
    )
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-briefing-")
    os.environ["NEWSROOM_DATA_DIR"] = tmp
    os.environ["DATABASE_URL"] = ""
    os.environ["NEWSROOM_LLM_URL"] = ""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "newsroom.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from fold_app.models import Item
    from newsroom.briefing import text as textlib
    from newsroom.briefing.cluster import (
        LshIndex,
        cluster,
        cluster_all_pairs,
        similar_pairs_matrix,
    )
    from newsroom.briefing.embed import get_embedder
    from newsroom.briefing.service import write_briefing
    from newsroom.sources.models import Source

    call_command("migrate", verbosity=0)
    reader = get_user_model().objects.create_user("bench", password="bench-password-1")
    day = date(2026, 11, 30)
    start = datetime(2026, 11, 30, 0, 5, tzinfo=UTC)
    generated = generate(args.items)
    sources: dict[str, Source] = {}
    rows = []
    for k, g in enumerate(generated):
        if g["source"] not in sources:
            host = g["url"].split("/")[2]
            sources[g["source"]] = Source.objects.create(
                reader=reader,
                url=f"https://{host}/feed",
                title=g["source"],
                site_url=f"https://{host}/",
            )
        when = start + timedelta(seconds=40 * k)
        rows.append(
            Item(
                source=sources[g["source"]],
                key=f"k{k}",
                title=g["title"],
                url=g["url"],
                text=g["text"],
                published=when,
                first_seen_at=when,
                updated_at=when,
            )
        )
    Item.objects.bulk_create(rows, batch_size=500)
    stories = len({g["story"] for g in generated})
    print(f"generated items={len(rows)} stories={stories} sources={len(sources)}")

    t = time.perf_counter()
    embedder = get_embedder()
    load_s = time.perf_counter() - t
    texts = [f"{g['title']}. {g['text'][:400]}" for g in generated]
    embedder.encode(texts[:64])  # warm the tokenizer
    t = time.perf_counter()
    vectors = embedder.encode(texts)
    embed_s = time.perf_counter() - t
    print(f"embedder_load_s={load_s:.2f} embed_s={embed_s:.3f}")

    now = datetime(2026, 11, 30, 23, 59, tzinfo=UTC)
    marks: list[tuple[str, float]] = []

    def echo(progress: dict, message: str | None) -> None:
        if message:
            marks.append((progress["stage"], time.perf_counter()))

    if args.profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.runcall(write_briefing, reader, day, now=now)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
    t = time.perf_counter()
    briefing = write_briefing(reader, day, now=now, echo=echo)
    brief_s = time.perf_counter() - t
    stages = [
        f"{a}={b_t - a_t:.2f}s"
        for (a, a_t), (_, b_t) in zip(marks, marks[1:], strict=False)
    ]
    print("stages " + " ".join(stages))
    print(
        f"briefing events={len(briefing.events)} edges={len(briefing.graph['edges'])} "
        f"words={briefing.word_count} sections={len(briefing.sections)} brief_s={brief_s:.2f}"
    )
    # The baseline: the same briefing, every pair of items scored one by one.
    t = time.perf_counter()
    baseline_briefing = write_briefing(reader, day, now=now, all_pairs=True)
    baseline_s = time.perf_counter() - t
    print(
        f"baseline (all pairs) events={len(baseline_briefing.events)} brief_s={baseline_s:.2f}"
    )

    from django.conf import settings

    threshold = settings.NEWSROOM_BRIEFING_SAME_STORY
    titles = [textlib.normalise_title(g["title"]) for g in generated]
    urls = [textlib.normalise_url(g["url"]) for g in generated]
    names = [
        frozenset(
            nm.text
            for nm in textlib.extract_names(f"{g['title']}. {g['text']}")
            if nm.kind == "place"
        )
        for g in generated
    ]
    t = time.perf_counter()
    lsh = cluster(vectors, titles, urls, threshold, names=names)
    lsh_s = time.perf_counter() - t
    t = time.perf_counter()
    exact = similar_pairs_matrix(vectors, threshold)
    matrix_s = time.perf_counter() - t
    found = LshIndex().candidate_pairs(vectors)
    recall = len(exact & found) / max(1, len(exact))
    t = time.perf_counter()
    baseline = cluster_all_pairs(vectors, titles, urls, threshold, names=names)
    pairwise_s = time.perf_counter() - t
    n = len(vectors)
    print(
        f"cluster_lsh_s={lsh_s:.3f} groups={len(lsh.groups)} scored={lsh.candidates} "
        f"distinct_candidates={len(found)} all_pairs={n * (n - 1) // 2} lsh_recall={recall:.3f}"
    )
    print(
        f"cluster_allpairs_loop_s={pairwise_s:.2f} groups={len(baseline.groups)} "
        f"allpairs_matrix_product_s={matrix_s:.3f}"
    )

    # How clustering grows: days of 2x and 4x the items, generated alike.
    growth = []
    for factor in (1, 2, 4):
        more = generate(n * factor, seed=11)
        more_vectors = embedder.encode(
            [f"{g['title']}. {g['text'][:400]}" for g in more]
        )
        blank = [""] * len(more)
        t = time.perf_counter()
        cluster(more_vectors, blank, blank, threshold)
        growth.append((len(more), time.perf_counter() - t))
    print(
        "lsh_growth "
        + " ".join(f"n={size}:{secs:.2f}s" for size, secs in growth)
        + f" (x{growth[-1][1] / growth[0][1]:.1f} for x4 items; all pairs grow x16)"
    )
    print(
        f"items={n} events={len(briefing.events)} brief_s={brief_s:.2f} "
        f"embed_items_per_s={n / embed_s:.0f} pairwise_ratio={brief_s / baseline_s:.3f}"
    )


if __name__ == "__main__":
    main()
