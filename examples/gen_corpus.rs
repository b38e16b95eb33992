//! Writes `corpus/`: small, realistic sample rows that pgdict makes itself.
//!
//! ```text
//! cargo run --example gen_corpus              # writes corpus/ in the workspace
//! cargo run --example gen_corpus -- DIR       # writes the three files into DIR instead
//! ```
//!
//! Three row files, 2000 datums each, one datum per line (see `corpus/README.md`):
//!
//! | file              | datum                                              | bytes per datum |
//! |-------------------|----------------------------------------------------|-----------------|
//! | `events.jsonl`    | a web/app analytics event, one compact JSON object | 150–600         |
//! | `app_logs.txt`    | a log line of a small web shop's services          | 80–300          |
//! | `orders_csv.txt`  | a CSV row of an order (RFC 4180 quoting)           | 70–200          |
//!
//! The rows are made up: every name, city, street, product and message comes from the
//! vocabulary lists below, combined by a seeded pseudo-random generator (splitmix64). They
//! are built to look like what real tables hold: a fixed schema with varying values, skewed
//! choices (a few users, pages and products are much more common than the rest), identifiers
//! that are random (UUIDs, request ids) next to ones that count up (order numbers), and
//! timestamps that move forward. Host names are from the reserved `example` domains and IP
//! addresses from the documentation ranges (RFC 5737).
//!
//! The output depends only on this file: the same source writes the same bytes on every run
//! and every machine (no clock, no environment, no hash-map order, no floating point).
//! A datum whose length falls outside its file's range is drawn again, which keeps the
//! lengths in range without changing that.

use std::fmt::Write as _;
use std::path::PathBuf;

/// Datums per file.
const ROWS: usize = 2000;

/// The seed of every file's generator; each file mixes in its own constant, so changing one
/// file's generator leaves the other files as they were.
const SEED: u64 = 0x7067_6469_6374_0001; // "pgdict" + 1

/// One file of the corpus and how its rows are made.
struct RowFile {
    name: &'static str,
    /// Mixed into [`SEED`]: each file draws from its own sequence.
    stream: u64,
    /// Every datum's length is in this range (a datum outside it is drawn again).
    min_len: usize,
    max_len: usize,
    /// Makes the datum with this index (0-based), without its line feed.
    make: fn(&mut Rng, usize) -> String,
}

const FILES: [RowFile; 3] = [
    RowFile {
        name: "events.jsonl",
        stream: 1,
        min_len: 150,
        max_len: 600,
        make: event,
    },
    RowFile {
        name: "app_logs.txt",
        stream: 2,
        min_len: 80,
        max_len: 300,
        make: log_line,
    },
    RowFile {
        name: "orders_csv.txt",
        stream: 3,
        min_len: 70,
        max_len: 200,
        make: order,
    },
];

fn main() {
    let dir = match std::env::args_os().nth(1) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus"),
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("gen_corpus: cannot create {}: {e}", dir.display());
        std::process::exit(1);
    }
    println!(
        "{:<16} {:>6} {:>9} {:>18}",
        "file", "rows", "bytes", "min/median/max"
    );
    let mut total = 0;
    for file in &FILES {
        let mut rng = Rng::new(SEED ^ file.stream.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut text = String::new();
        let mut lengths = Vec::with_capacity(ROWS);
        for index in 0..ROWS {
            let row = loop {
                let row = (file.make)(&mut rng, index);
                if (file.min_len..=file.max_len).contains(&row.len()) {
                    break row;
                }
            };
            debug_assert!(!row.contains('\n') && !row.contains('\r'));
            lengths.push(row.len());
            text.push_str(&row);
            text.push('\n');
        }
        let path = dir.join(file.name);
        if let Err(e) = std::fs::write(&path, &text) {
            eprintln!("gen_corpus: cannot write {}: {e}", path.display());
            std::process::exit(1);
        }
        lengths.sort_unstable();
        println!(
            "{:<16} {:>6} {:>9} {:>18}",
            file.name,
            ROWS,
            text.len(),
            format!(
                "{} / {} / {}",
                lengths[0],
                lengths[ROWS / 2],
                lengths[ROWS - 1]
            )
        );
        total += text.len();
    }
    println!("{:<16} {:>6} {:>9}", "total", ROWS * 3, total);
}

// ---------------------------------------------------------------------------------------------
// The generator

/// splitmix64: a 64-bit state advanced by a constant, then mixed. Tiny, fast, and every seed
/// (zero included) gives a full-period sequence, which is all a sample generator needs.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (multiply-shift: no modulo bias worth speaking of).
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }

    /// A number in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `percent` / 100.
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// An index in `0..n`, small ones much more often than large ones (about a third of the
    /// draws fall in the first tenth): how users, pages and products are visited.
    fn skewed(&mut self, n: usize) -> usize {
        let u = self.below(1 << 20);
        ((u * u * n as u64) >> 40) as usize
    }

    fn pick_skewed<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.skewed(items.len())]
    }

    /// One of `items`, each as often as its weight.
    fn weighted<'a, T>(&mut self, items: &'a [(T, u64)]) -> &'a T {
        let total: u64 = items.iter().map(|(_, w)| w).sum();
        let mut at = self.below(total);
        for (item, weight) in items {
            if at < *weight {
                return item;
            }
            at -= weight;
        }
        unreachable!("weights sum to {total}")
    }

    /// `len` lowercase hexadecimal digits.
    fn hex(&mut self, len: usize) -> String {
        (0..len)
            .map(|_| char::from(b"0123456789abcdef"[self.below(16) as usize]))
            .collect()
    }

    /// A random (version 4) UUID.
    fn uuid(&mut self) -> String {
        let variant = char::from(b"89ab"[self.below(4) as usize]);
        format!(
            "{}-{}-4{}-{variant}{}-{}",
            self.hex(8),
            self.hex(4),
            self.hex(3),
            self.hex(3),
            self.hex(12)
        )
    }

    /// A string made from `pattern`: `9` becomes a digit, `A` a capital letter, anything else
    /// stays (postcodes, phone numbers).
    fn pattern(&mut self, pattern: &str) -> String {
        pattern
            .chars()
            .map(|c| match c {
                '9' => char::from(b'0' + self.below(10) as u8),
                'A' => char::from(b'A' + self.below(26) as u8),
                c => c,
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Time: seconds since 2024-01-01T00:00:00Z, written as ISO 8601. The rows of each file move
// forward in time, each file from its own start.

/// Days in each month of 2024 (a leap year); the files stay within it.
const MONTH_DAYS: [u64; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/// (month 1..=12, day 1..=31, hour, minute, second) of `secs` after the start of 2024.
fn civil(secs: u64) -> (u64, u64, u64, u64, u64) {
    let mut day = secs / 86_400;
    let mut month = 0;
    while month < 11 && day >= MONTH_DAYS[month] {
        day -= MONTH_DAYS[month];
        month += 1;
    }
    let in_day = secs % 86_400;
    (
        month as u64 + 1,
        day + 1,
        in_day / 3600,
        in_day / 60 % 60,
        in_day % 60,
    )
}

/// `2024-03-11T08:15:02.417Z`
fn iso_millis(millis: u64) -> String {
    let (mo, d, h, mi, s) = civil(millis / 1000);
    format!(
        "2024-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{:03}Z",
        millis % 1000
    )
}

/// `2024-03-11 08:15:02`
fn iso_seconds(secs: u64) -> String {
    let (mo, d, h, mi, s) = civil(secs);
    format!("2024-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}")
}

/// Where each file's clock starts, in seconds after the start of 2024.
const EVENTS_START: u64 = (31 + 29 + 10) * 86_400 + 7 * 3600; // 2024-03-11 07:00
const LOGS_START: u64 = (31 + 29 + 13) * 86_400 + 14 * 3600 + 5 * 60; // 2024-03-14 14:05
const ORDERS_START: u64 = 31 * 86_400 + 9 * 3600; // 2024-02-01 09:00

// ---------------------------------------------------------------------------------------------
// Shared vocabulary: the shop the three files describe.

/// A product: SKU, name, category, price in euro cents.
struct Product {
    sku: &'static str,
    name: &'static str,
    category: &'static str,
    cents: u64,
}

const PRODUCTS: &[Product] = &[
    Product {
        sku: "TRS-204",
        name: "Trail Runner 2",
        category: "shoes",
        cents: 8995,
    },
    Product {
        sku: "SOK-011",
        name: "Merino Hiking Socks",
        category: "socks",
        cents: 1495,
    },
    Product {
        sku: "JKT-310",
        name: "Stormproof Shell Jacket",
        category: "jackets",
        cents: 17900,
    },
    Product {
        sku: "BAG-042",
        name: "Daypack 22L",
        category: "bags",
        cents: 6450,
    },
    Product {
        sku: "TEE-101",
        name: "Organic Cotton Tee",
        category: "tops",
        cents: 2490,
    },
    Product {
        sku: "TEE-102",
        name: "Striped Breton Tee",
        category: "tops",
        cents: 2990,
    },
    Product {
        sku: "PNT-220",
        name: "Stretch Chino",
        category: "trousers",
        cents: 5990,
    },
    Product {
        sku: "PNT-221",
        name: "Convertible Hiking Pants",
        category: "trousers",
        cents: 7490,
    },
    Product {
        sku: "CAP-007",
        name: "Wool Beanie",
        category: "accessories",
        cents: 1990,
    },
    Product {
        sku: "BTL-500",
        name: "Insulated Bottle 0.5L",
        category: "accessories",
        cents: 2450,
    },
    Product {
        sku: "TRS-310",
        name: "Road Runner Pro",
        category: "shoes",
        cents: 12900,
    },
    Product {
        sku: "SND-015",
        name: "Sport Sandal",
        category: "shoes",
        cents: 4990,
    },
    Product {
        sku: "FLC-330",
        name: "Grid Fleece Hoodie",
        category: "tops",
        cents: 6990,
    },
    Product {
        sku: "GLV-020",
        name: "Touchscreen Gloves",
        category: "accessories",
        cents: 2290,
    },
    Product {
        sku: "TNT-900",
        name: "Ultralight Tent 2P",
        category: "camping",
        cents: 34900,
    },
    Product {
        sku: "SLB-610",
        name: "Down Sleeping Bag -5C",
        category: "camping",
        cents: 24900,
    },
    Product {
        sku: "MAT-120",
        name: "Self-Inflating Mat",
        category: "camping",
        cents: 7990,
    },
    Product {
        sku: "LMP-045",
        name: "Headlamp 400lm",
        category: "camping",
        cents: 3490,
    },
    Product {
        sku: "JKT-355",
        name: "Packable Down Vest",
        category: "jackets",
        cents: 8990,
    },
    Product {
        sku: "SHT-140",
        name: "Linen Shirt",
        category: "tops",
        cents: 4490,
    },
    Product {
        sku: "SKR-060",
        name: "Pleated Midi Skirt",
        category: "skirts",
        cents: 5490,
    },
    Product {
        sku: "DRS-075",
        name: "Jersey Wrap Dress",
        category: "dresses",
        cents: 6990,
    },
    Product {
        sku: "BLT-009",
        name: "Leather Belt",
        category: "accessories",
        cents: 3990,
    },
    Product {
        sku: "SCF-018",
        name: "Alpaca Scarf",
        category: "accessories",
        cents: 4990,
    },
    Product {
        sku: "BOT-410",
        name: "Waterproof Hiking Boot",
        category: "shoes",
        cents: 15900,
    },
    Product {
        sku: "UMB-003",
        name: "Compact Umbrella",
        category: "accessories",
        cents: 1790,
    },
    Product {
        sku: "RNC-250",
        name: "Running Shorts",
        category: "trousers",
        cents: 3490,
    },
    Product {
        sku: "BRA-070",
        name: "Sports Bra",
        category: "tops",
        cents: 3990,
    },
];

/// A country: ISO code, currency and its price factor in thousandths of the euro price,
/// locale, cities, streets, how an address is written, postcode pattern, names.
struct Country {
    code: &'static str,
    currency: &'static str,
    per_mille: u64,
    locale: &'static str,
    cities: &'static [&'static str],
    streets: &'static [&'static str],
    number_first: bool,
    postcode: &'static str,
    first_names: &'static [&'static str],
    last_names: &'static [&'static str],
}

const COUNTRIES: &[Country] = &[
    Country {
        code: "DE",
        currency: "EUR",
        per_mille: 1000,
        locale: "de-DE",
        cities: &[
            "Berlin",
            "Hamburg",
            "München",
            "Köln",
            "Frankfurt am Main",
            "Leipzig",
            "Stuttgart",
            "Dresden",
        ],
        streets: &[
            "Hauptstraße",
            "Schillerstraße",
            "Bahnhofstraße",
            "Gartenweg",
            "Lindenallee",
            "Am Markt",
            "Goethestraße",
            "Kirchgasse",
        ],
        number_first: false,
        postcode: "99999",
        first_names: &[
            "Lukas",
            "Anna",
            "Jonas",
            "Lena",
            "Felix",
            "Marie",
            "Paul",
            "Sophie",
            "Maximilian",
            "Hannah",
            "Jürgen",
            "Katrin",
        ],
        last_names: &[
            "Müller",
            "Schmidt",
            "Schneider",
            "Fischer",
            "Weber",
            "Meyer",
            "Wagner",
            "Becker",
            "Hoffmann",
            "Schäfer",
            "Koch",
            "Richter",
        ],
    },
    Country {
        code: "FR",
        currency: "EUR",
        per_mille: 1000,
        locale: "fr-FR",
        cities: &[
            "Paris",
            "Lyon",
            "Marseille",
            "Toulouse",
            "Nantes",
            "Bordeaux",
            "Lille",
            "Strasbourg",
        ],
        streets: &[
            "rue de la République",
            "avenue Victor Hugo",
            "rue des Lilas",
            "boulevard Voltaire",
            "rue Pasteur",
            "place du Marché",
            "rue Nationale",
        ],
        number_first: true,
        postcode: "99999",
        first_names: &[
            "Camille", "Louis", "Chloé", "Hugo", "Léa", "Gabriel", "Manon", "Arthur", "Inès",
            "Théo", "Élodie", "Julien",
        ],
        last_names: &[
            "Martin", "Bernard", "Dubois", "Thomas", "Robert", "Richard", "Petit", "Durand",
            "Leroy", "Moreau", "Lefèvre", "Garnier",
        ],
    },
    Country {
        code: "ES",
        currency: "EUR",
        per_mille: 1000,
        locale: "es-ES",
        cities: &[
            "Madrid",
            "Barcelona",
            "Valencia",
            "Sevilla",
            "Zaragoza",
            "Málaga",
            "Bilbao",
        ],
        streets: &[
            "Calle Mayor",
            "Calle de Alcalá",
            "Avenida de la Constitución",
            "Calle del Sol",
            "Paseo de Gracia",
            "Calle Real",
        ],
        number_first: false,
        postcode: "99999",
        first_names: &[
            "Lucía",
            "Hugo",
            "María",
            "Pablo",
            "Martina",
            "Daniel",
            "Sofía",
            "Alejandro",
            "Carmen",
            "Javier",
        ],
        last_names: &[
            "García",
            "Fernández",
            "González",
            "Rodríguez",
            "López",
            "Martínez",
            "Sánchez",
            "Pérez",
            "Gómez",
            "Ruiz",
        ],
    },
    Country {
        code: "IT",
        currency: "EUR",
        per_mille: 1000,
        locale: "it-IT",
        cities: &[
            "Roma", "Milano", "Napoli", "Torino", "Bologna", "Firenze", "Genova",
        ],
        streets: &[
            "Via Roma",
            "Via Garibaldi",
            "Corso Italia",
            "Via Dante",
            "Piazza della Libertà",
            "Via Verdi",
        ],
        number_first: false,
        postcode: "99999",
        first_names: &[
            "Giulia",
            "Francesco",
            "Sofia",
            "Alessandro",
            "Aurora",
            "Lorenzo",
            "Chiara",
            "Matteo",
            "Federica",
            "Niccolò",
        ],
        last_names: &[
            "Rossi", "Russo", "Ferrari", "Esposito", "Bianchi", "Romano", "Colombo", "Ricci",
            "Marino", "Greco",
        ],
    },
    Country {
        code: "NL",
        currency: "EUR",
        per_mille: 1000,
        locale: "nl-NL",
        cities: &[
            "Amsterdam",
            "Rotterdam",
            "Utrecht",
            "Den Haag",
            "Eindhoven",
            "Groningen",
        ],
        streets: &[
            "Kerkstraat",
            "Molenweg",
            "Dorpsstraat",
            "Prinsengracht",
            "Stationsplein",
            "Julianalaan",
        ],
        number_first: false,
        postcode: "9999 AA",
        first_names: &[
            "Daan", "Emma", "Sem", "Julia", "Lucas", "Tess", "Bram", "Sanne", "Thijs", "Fleur",
        ],
        last_names: &[
            "de Jong",
            "Jansen",
            "de Vries",
            "van den Berg",
            "van Dijk",
            "Bakker",
            "Visser",
            "Smit",
            "Meijer",
            "de Boer",
        ],
    },
    Country {
        code: "GB",
        currency: "GBP",
        per_mille: 860,
        locale: "en-GB",
        cities: &[
            "London",
            "Manchester",
            "Leeds",
            "Bristol",
            "Edinburgh",
            "Glasgow",
            "Birmingham",
            "Cardiff",
        ],
        streets: &[
            "High Street",
            "Station Road",
            "Church Lane",
            "Victoria Road",
            "Mill Lane",
            "Park Avenue",
            "King's Road",
        ],
        number_first: true,
        postcode: "AA9 9AA",
        first_names: &[
            "Oliver", "Amelia", "Harry", "Isla", "George", "Ava", "Jack", "Mia", "Charlie",
            "Grace", "Siobhan", "Rhys",
        ],
        last_names: &[
            "Smith", "Jones", "Taylor", "Brown", "Williams", "Wilson", "Evans", "Thomas",
            "Roberts", "O'Neill", "Campbell", "Hughes",
        ],
    },
    Country {
        code: "IE",
        currency: "EUR",
        per_mille: 1000,
        locale: "en-IE",
        cities: &["Dublin", "Cork", "Galway", "Limerick"],
        streets: &[
            "Main Street",
            "Church Street",
            "Patrick Street",
            "Green Lane",
        ],
        number_first: true,
        postcode: "A99 A9A9",
        first_names: &[
            "Seán", "Aoife", "Conor", "Niamh", "Cian", "Saoirse", "Darragh", "Ciara",
        ],
        last_names: &[
            "Murphy",
            "Kelly",
            "O'Sullivan",
            "Walsh",
            "O'Brien",
            "Byrne",
            "Ryan",
            "O'Connor",
        ],
    },
    Country {
        code: "US",
        currency: "USD",
        per_mille: 1090,
        locale: "en-US",
        cities: &[
            "New York", "Boston", "Chicago", "Seattle", "Denver", "Austin", "Portland",
        ],
        streets: &[
            "Main St",
            "Oak Ave",
            "Maple Dr",
            "Washington Blvd",
            "Elm St",
            "2nd Ave",
            "Lakeview Rd",
        ],
        number_first: true,
        postcode: "99999",
        first_names: &[
            "Emily", "Michael", "Olivia", "James", "Madison", "Ethan", "Abigail", "Noah", "Chloe",
            "Tyler",
        ],
        last_names: &[
            "Johnson", "Miller", "Davis", "Garcia", "Anderson", "Jackson", "White", "Harris",
            "Clark", "Lewis",
        ],
    },
    Country {
        code: "PL",
        currency: "PLN",
        per_mille: 4310,
        locale: "pl-PL",
        cities: &["Warszawa", "Kraków", "Wrocław", "Poznań", "Gdańsk", "Łódź"],
        streets: &[
            "ul. Marszałkowska",
            "ul. Długa",
            "ul. Kwiatowa",
            "ul. Ogrodowa",
            "al. Jana Pawła II",
            "ul. Polna",
        ],
        number_first: false,
        postcode: "99-999",
        first_names: &[
            "Zuzanna", "Jakub", "Julia", "Szymon", "Maja", "Antoni", "Wiktoria", "Kacper",
        ],
        last_names: &[
            "Nowak",
            "Kowalski",
            "Wiśniewska",
            "Wójcik",
            "Kamińska",
            "Lewandowski",
            "Zieliński",
            "Szymańska",
        ],
    },
    Country {
        code: "SE",
        currency: "SEK",
        per_mille: 11_300,
        locale: "sv-SE",
        cities: &["Stockholm", "Göteborg", "Malmö", "Uppsala", "Linköping"],
        streets: &[
            "Storgatan",
            "Drottninggatan",
            "Kungsgatan",
            "Skolgatan",
            "Björkvägen",
        ],
        number_first: false,
        postcode: "999 99",
        first_names: &[
            "Elsa", "William", "Alice", "Oscar", "Maja", "Lucas", "Ebba", "Hugo",
        ],
        last_names: &[
            "Andersson",
            "Johansson",
            "Karlsson",
            "Nilsson",
            "Eriksson",
            "Larsson",
            "Olsson",
            "Persson",
        ],
    },
    Country {
        code: "PT",
        currency: "EUR",
        per_mille: 1000,
        locale: "pt-PT",
        cities: &["Lisboa", "Porto", "Braga", "Coimbra", "Faro"],
        streets: &[
            "Rua Augusta",
            "Avenida da Liberdade",
            "Rua do Carmo",
            "Rua de Santa Catarina",
            "Largo do Rato",
        ],
        number_first: false,
        postcode: "9999-999",
        first_names: &[
            "João", "Beatriz", "Tiago", "Inês", "Rodrigo", "Mariana", "Diogo", "Leonor",
        ],
        last_names: &[
            "Silva",
            "Santos",
            "Ferreira",
            "Pereira",
            "Oliveira",
            "Costa",
            "Rodrigues",
            "Gonçalves",
        ],
    },
    Country {
        code: "AT",
        currency: "EUR",
        per_mille: 1000,
        locale: "de-AT",
        cities: &["Wien", "Graz", "Linz", "Salzburg", "Innsbruck"],
        streets: &[
            "Mariahilfer Straße",
            "Landstraße",
            "Herrengasse",
            "Getreidegasse",
            "Wiener Straße",
        ],
        number_first: false,
        postcode: "9999",
        first_names: &[
            "Tobias",
            "Laura",
            "Elias",
            "Valentina",
            "Florian",
            "Johanna",
            "Stefan",
            "Theresa",
        ],
        last_names: &[
            "Gruber", "Huber", "Bauer", "Wagner", "Pichler", "Steiner", "Moser", "Mayer",
        ],
    },
];

/// How often each country's customers show up, in the order of [`COUNTRIES`].
const COUNTRY_WEIGHTS: [u64; 12] = [30, 14, 9, 7, 8, 12, 2, 6, 4, 3, 2, 3];

fn country(rng: &mut Rng) -> &'static Country {
    let mut at = rng.below(COUNTRY_WEIGHTS.iter().sum());
    for (country, &weight) in COUNTRIES.iter().zip(&COUNTRY_WEIGHTS) {
        if at < weight {
            return country;
        }
        at -= weight;
    }
    unreachable!()
}

/// `12.34`: cents as a decimal amount.
fn money(cents: u64) -> String {
    format!("{}.{:02}", cents / 100, cents % 100)
}

/// A product's price in a country's currency, ending in 9 cents like shop prices do.
fn price_in(product: &Product, country: &Country) -> u64 {
    let cents = product.cents * country.per_mille / 1000;
    if country.per_mille == 1000 {
        cents
    } else {
        cents / 10 * 10 + 9
    }
}

/// An address from the documentation ranges (RFC 5737): 192.0.2.0/24, 198.51.100.0/24,
/// 203.0.113.0/24.
fn doc_ip(rng: &mut Rng) -> String {
    let net = rng.pick(&["192.0.2", "198.51.100", "203.0.113"]);
    format!("{net}.{}", rng.range(1, 254))
}

/// Lowercase ASCII for an e-mail local part: drops accents, spaces and apostrophes.
fn ascii_slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        let plain = match c {
            'á' | 'à' | 'â' | 'ä' | 'ã' | 'å' | 'ą' => "a",
            'é' | 'è' | 'ê' | 'ë' | 'ę' | 'É' => "e",
            'í' | 'ì' | 'î' | 'ï' => "i",
            'ó' | 'ò' | 'ô' | 'ö' | 'õ' | 'ø' => "o",
            'ú' | 'ù' | 'û' | 'ü' => "u",
            'ñ' | 'ń' => "n",
            'ç' | 'ć' => "c",
            'ś' => "s",
            'ż' | 'ź' => "z",
            'ł' | 'Ł' => "l",
            'ß' => "ss",
            ' ' | '\'' | '-' => "",
            c if c.is_ascii_alphanumeric() => {
                out.push(c.to_ascii_lowercase());
                continue;
            }
            _ => "",
        };
        out.push_str(plain);
    }
    out
}

/// Mail domains of the made-up customers (`example` names, reserved for documentation).
const MAIL_DOMAINS: &[(&str, u64)] = &[
    ("example.com", 40),
    ("example.net", 20),
    ("example.org", 12),
    ("mail.example", 14),
    ("post.example", 8),
    ("inbox.example", 6),
];

// ---------------------------------------------------------------------------------------------
// events.jsonl: analytics events of the shop's website and apps.

/// A JSON string literal: `s` quoted, with `"`, `\` and control characters escaped.
fn js<S: AsRef<str> + ?Sized>(s: &S) -> String {
    let s = s.as_ref();
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A compact JSON object from (key, already-encoded value) pairs, in order.
fn obj(fields: &[(&str, String)]) -> String {
    let mut out = String::from("{");
    for (i, (key, value)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&js(key));
        out.push(':');
        out.push_str(value);
    }
    out.push('}');
    out
}

/// Where an event comes from: the website in a browser, or one of the apps.
struct Client {
    platform: &'static str,
    device: &'static str,
    os: &'static str,
    os_versions: &'static [&'static str],
    browser: Option<(&'static str, &'static [&'static str])>,
    app: &'static str,
    app_versions: &'static [&'static str],
}

const CLIENTS: &[(Client, u64)] = &[
    (
        Client {
            platform: "web",
            device: "desktop",
            os: "Windows",
            os_versions: &["10", "11"],
            browser: Some(("Chrome", &["122.0", "123.0", "121.0"])),
            app: "shop-web",
            app_versions: &["4.12.1", "4.12.0", "4.11.3"],
        },
        26,
    ),
    (
        Client {
            platform: "web",
            device: "desktop",
            os: "macOS",
            os_versions: &["14.3", "14.4", "13.6"],
            browser: Some(("Safari", &["17.3", "17.4", "16.6"])),
            app: "shop-web",
            app_versions: &["4.12.1", "4.12.0", "4.11.3"],
        },
        10,
    ),
    (
        Client {
            platform: "web",
            device: "desktop",
            os: "Windows",
            os_versions: &["10", "11"],
            browser: Some(("Firefox", &["123.0", "124.0", "115.9"])),
            app: "shop-web",
            app_versions: &["4.12.1", "4.12.0"],
        },
        6,
    ),
    (
        Client {
            platform: "web",
            device: "mobile",
            os: "Android",
            os_versions: &["14", "13", "12"],
            browser: Some(("Chrome", &["122.0", "123.0"])),
            app: "shop-web",
            app_versions: &["4.12.1", "4.12.0", "4.11.3"],
        },
        18,
    ),
    (
        Client {
            platform: "web",
            device: "mobile",
            os: "iOS",
            os_versions: &["17.3.1", "17.4", "16.7.5"],
            browser: Some(("Safari", &["17.3", "17.4", "16.6"])),
            app: "shop-web",
            app_versions: &["4.12.1", "4.12.0"],
        },
        14,
    ),
    (
        Client {
            platform: "ios",
            device: "mobile",
            os: "iOS",
            os_versions: &["17.3.1", "17.4", "17.2.1", "16.7.5"],
            browser: None,
            app: "shop-ios",
            app_versions: &["5.3.0", "5.2.2", "5.2.1"],
        },
        15,
    ),
    (
        Client {
            platform: "android",
            device: "mobile",
            os: "Android",
            os_versions: &["14", "13", "12", "11"],
            browser: None,
            app: "shop-android",
            app_versions: &["5.3.0", "5.2.4"],
        },
        11,
    ),
];

const EVENT_TYPES: &[(&str, u64)] = &[
    ("page_view", 34),
    ("product_viewed", 18),
    ("search", 10),
    ("add_to_cart", 9),
    ("button_clicked", 8),
    ("checkout_started", 4),
    ("order_completed", 3),
    ("login", 5),
    ("signup", 2),
    ("video_played", 3),
    ("client_error", 4),
    ("heartbeat", 12),
    ("scroll_depth", 6),
];

const PAGES: &[(&str, &str)] = &[
    ("/", "Home"),
    ("/c/shoes", "Shoes"),
    ("/c/jackets", "Jackets"),
    ("/sale", "Sale"),
    ("/c/tops", "Tops & T-Shirts"),
    ("/cart", "Your cart"),
    ("/c/camping", "Camping"),
    ("/account/orders", "My orders"),
    ("/new-in", "New in"),
    ("/c/accessories", "Accessories"),
    ("/help/shipping", "Shipping & delivery"),
    ("/help/returns", "Returns"),
    ("/stores", "Find a store"),
    ("/account/settings", "Account settings"),
    ("/blog/layering-guide", "How to layer for a winter hike"),
    ("/gift-cards", "Gift cards"),
];

const REFERRERS: &[(&str, u64)] = &[
    ("", 45),
    ("https://search.example.com/", 22),
    ("https://news.example.org/outdoor/best-hiking-gear-2024", 4),
    ("https://social.example.net/", 9),
    ("https://video.example.com/watch", 3),
    ("https://mail.example/", 5),
    ("https://blog.example.org/trail-running-shoes-review", 3),
];

const CAMPAIGNS: &[(&str, &str, &str)] = &[
    ("newsletter", "email", "spring_sale_2024"),
    ("newsletter", "email", "new_arrivals_w11"),
    ("search", "cpc", "brand_terms"),
    ("search", "cpc", "shoes_generic"),
    ("social", "paid_social", "trail_season"),
    ("partner", "affiliate", "outdoor_blog_q1"),
];

const SEARCHES: &[&str] = &[
    "running shoes",
    "rain jacket",
    "merino socks",
    "tent",
    "trail runner 2",
    "hoodie",
    "down vest women",
    "hiking boots waterproof",
    "sleeping bag",
    "gift card",
    "linen shirt",
    "beanie",
    "size guide",
    "sandals",
    "headlamp",
    "returns",
];

const BUTTONS: &[(&str, &str, &str)] = &[
    ("hero_cta", "Shop the sale", "home_hero"),
    ("size_guide", "Size guide", "product_details"),
    ("wishlist_add", "Add to wishlist", "product_details"),
    ("newsletter_submit", "Subscribe", "footer"),
    ("filter_apply", "Show results", "category_filters"),
    ("store_locator", "Find a store", "header"),
    ("chat_open", "Chat with us", "help_widget"),
    ("cookie_accept", "Accept all", "cookie_banner"),
];

const CLIENT_ERRORS: &[(&str, &str)] = &[
    (
        "TypeError: Cannot read properties of undefined (reading 'price')",
        "checkout",
    ),
    ("ChunkLoadError: Loading chunk 713 failed.", "vendor"),
    ("NetworkError when attempting to fetch resource.", "app"),
    ("ResizeObserver loop limit exceeded", "app"),
    (
        "Unhandled promise rejection: Error: request timed out after 10000ms",
        "cart",
    ),
    ("TypeError: Load failed", "product"),
];

fn event(rng: &mut Rng, index: usize) -> String {
    // Events arrive every few seconds, with busier and quieter stretches.
    let millis = EVENTS_START * 1000 + index as u64 * 95_000 + rng.below(90_000);
    let client = rng.weighted(CLIENTS);
    let country = country(rng);
    let kind = *rng.weighted(EVENT_TYPES);
    if kind == "heartbeat" {
        // Sent every 30 s while a page or screen is open: small, and no context.
        return obj(&[
            ("id", js(&rng.uuid())),
            ("type", js(kind)),
            ("ts", js(&iso_millis(millis))),
            ("session_id", js(&format!("s_{}", rng.hex(10)))),
            (
                "properties",
                obj(&[
                    ("active_s", (rng.range(1, 20) * 30).to_string()),
                    ("visible", rng.chance(80).to_string()),
                ]),
            ),
        ]);
    }
    // A few users produce many of the events; some visitors are not logged in.
    let logged_in = kind != "signup" && rng.chance(72);
    let user_id = (100_000 + rng.skewed(60_000) as u64 * 7 + rng.below(7)).to_string();
    let product = rng.pick_skewed(PRODUCTS);

    let mut device = vec![
        ("type", js(client.device)),
        (
            "os",
            js(&format!("{} {}", client.os, rng.pick(client.os_versions))),
        ),
    ];
    if let Some((browser, versions)) = client.browser {
        device.push(("browser", js(&format!("{browser} {}", rng.pick(versions)))));
    }
    // The apps report their build; the website only which version of its script sent this.
    let version = rng.pick(client.app_versions);
    let app = if client.browser.is_none() {
        (
            "app",
            obj(&[
                ("name", js(client.app)),
                ("version", js(version)),
                ("build", rng.range(5200, 5312).to_string()),
            ]),
        )
    } else {
        ("sdk", js(&format!("{}/{version}", client.app)))
    };
    let mut context = vec![
        app,
        ("device", obj(&device)),
        ("locale", js(country.locale)),
        (
            "geo",
            obj(&[
                ("country", js(country.code)),
                ("city", js(rng.pick_skewed(country.cities))),
            ]),
        ),
    ];
    let (path, title) = match kind {
        "product_viewed" | "add_to_cart" => (
            format!("/p/{}", product.sku.to_ascii_lowercase()),
            product.name,
        ),
        "search" => ("/search".to_string(), "Search"),
        "checkout_started" => ("/checkout".to_string(), "Checkout"),
        "order_completed" => ("/checkout/confirmation".to_string(), "Thank you"),
        "login" => ("/account/login".to_string(), "Sign in"),
        "signup" => ("/account/register".to_string(), "Create account"),
        _ => {
            let (path, title) = rng.pick_skewed(PAGES);
            (path.to_string(), *title)
        }
    };
    if client.platform == "web" {
        let referrer = *rng.weighted(REFERRERS);
        let mut page = vec![("path", js(&path))];
        if kind == "page_view" {
            page.push(("title", js(title)));
        }
        if !referrer.is_empty() {
            page.push(("referrer", js(referrer)));
        }
        context.push(("page", obj(&page)));
    } else {
        context.push((
            "screen",
            js(&format!(
                "{}{}",
                title.replace(['&', ' '], ""),
                if kind == "page_view" {
                    "Screen"
                } else {
                    "View"
                }
            )),
        ));
    }
    if rng.chance(12) {
        let (source, medium, name) = rng.pick(CAMPAIGNS);
        context.push((
            "campaign",
            obj(&[
                ("source", js(source)),
                ("medium", js(medium)),
                ("name", js(name)),
            ]),
        ));
    }

    let price = price_in(product, country);
    let properties = match kind {
        "page_view" => obj(&[("load_ms", rng.range(180, 2400).to_string())]),
        "scroll_depth" => obj(&[("percent", rng.pick(&[25, 50, 75, 100]).to_string())]),
        "product_viewed" => obj(&[
            ("product_id", js(product.sku)),
            ("name", js(product.name)),
            ("category", js(product.category)),
            ("price", money(price)),
            ("currency", js(country.currency)),
        ]),
        "search" => {
            let query = *rng.pick_skewed(SEARCHES);
            obj(&[
                ("query", js(query)),
                ("results", rng.below(140).to_string()),
                ("sort", js(rng.pick(&["relevance", "price_asc", "newest"]))),
            ])
        }
        "add_to_cart" => obj(&[
            ("product_id", js(product.sku)),
            (
                "quantity",
                rng.weighted(&[(1, 85), (2, 12), (3, 3)]).to_string(),
            ),
            ("price", money(price)),
            ("currency", js(country.currency)),
            ("cart_id", js(&format!("c_{}", rng.hex(12)))),
        ]),
        "button_clicked" => {
            let (id, label, section) = rng.pick(BUTTONS);
            obj(&[
                ("button_id", js(id)),
                ("label", js(label)),
                ("section", js(section)),
            ])
        }
        "checkout_started" => {
            let items = rng.range(1, 4);
            let mut fields = vec![
                ("cart_id", js(&format!("c_{}", rng.hex(12)))),
                ("items", items.to_string()),
                ("value", money(price * items)),
                ("currency", js(country.currency)),
            ];
            if rng.chance(20) {
                fields.push((
                    "coupon",
                    js(rng.pick(&["SPRING10", "WELCOME15", "FREESHIP"])),
                ));
            }
            obj(&fields)
        }
        "order_completed" => {
            let mut items = String::from("[");
            let mut value = 0;
            for i in 0..rng.range(1, 3) {
                let product = rng.pick_skewed(PRODUCTS);
                let qty = *rng.weighted(&[(1, 88), (2, 12)]);
                value += price_in(product, country) * qty;
                if i > 0 {
                    items.push(',');
                }
                items.push_str(&obj(&[("id", js(product.sku)), ("qty", qty.to_string())]));
            }
            items.push(']');
            let shipping = if value >= 5000 { 0 } else { 495 };
            obj(&[
                (
                    "order_id",
                    js(&format!(
                        "ORD-24-{}",
                        310_000 + index as u64 * 3 + rng.below(3)
                    )),
                ),
                ("items", items),
                ("value", money(value + shipping)),
                ("shipping", money(shipping)),
                ("currency", js(country.currency)),
                (
                    "payment",
                    js(rng.weighted(&[
                        ("card", 60),
                        ("paypal", 22),
                        ("klarna", 10),
                        ("giftcard", 3),
                        ("apple_pay", 5),
                    ])),
                ),
            ])
        }
        "login" => obj(&[
            (
                "method",
                js(rng.weighted(&[("password", 70), ("sso", 18), ("magic_link", 12)])),
            ),
            ("mfa", rng.chance(25).to_string()),
        ]),
        "signup" => obj(&[
            ("method", js(rng.weighted(&[("email", 70), ("sso", 30)]))),
            ("marketing_opt_in", rng.chance(40).to_string()),
        ]),
        "video_played" => {
            let duration = rng.range(30, 240);
            obj(&[
                ("video_id", js(&format!("v_{}", rng.hex(8)))),
                ("position_s", rng.below(duration).to_string()),
                ("duration_s", duration.to_string()),
                ("quality", js(rng.pick(&["480p", "720p", "1080p"]))),
            ])
        }
        "client_error" => {
            let (message, bundle) = rng.pick(CLIENT_ERRORS);
            obj(&[
                ("message", js(message)),
                (
                    "source",
                    js(&format!("/static/js/{bundle}.{}.js", rng.hex(8))),
                ),
                ("line", rng.range(1, 4000).to_string()),
                ("column", rng.range(1, 180).to_string()),
            ])
        }
        other => unreachable!("event type {other}"),
    };

    let mut event = vec![
        ("id", js(&rng.uuid())),
        ("type", js(kind)),
        ("ts", js(&iso_millis(millis))),
    ];
    // A visitor who is not logged in is known by a cookie's id instead.
    if logged_in {
        event.push(("user_id", user_id));
    } else {
        event.push(("anonymous_id", js(&format!("a_{}", rng.hex(16)))));
    }
    event.push(("session_id", js(&format!("s_{}", rng.hex(10)))));
    event.push(("context", obj(&context)));
    event.push(("properties", properties));
    obj(&event)
}

// ---------------------------------------------------------------------------------------------
// app_logs.txt: log lines of the shop's services, one format for all of them:
//
//   2024-03-14T14:05:02.417Z INFO  checkout-api[3] req=5f1c0e2a9b7d4c36 <message>

/// Services, how often each logs, and how many replicas they run.
const SERVICES: &[(&str, u64, u64)] = &[
    ("api-gateway", 34, 4),
    ("catalog-svc", 16, 3),
    ("checkout-api", 12, 3),
    ("search-svc", 10, 2),
    ("auth-svc", 9, 2),
    ("payments-svc", 6, 2),
    ("inventory-svc", 6, 2),
    ("email-worker", 4, 1),
    ("scheduler", 3, 1),
];

const LEVELS: &[(&str, u64)] = &[("INFO", 70), ("DEBUG", 12), ("WARN", 12), ("ERROR", 6)];

const API_ROUTES: &[(&str, &str)] = &[
    ("GET", "/api/v2/products/{sku}"),
    ("GET", "/api/v2/categories/{cat}/products?page={n}"),
    ("GET", "/api/v2/search?q={q}"),
    ("POST", "/api/v2/cart/items"),
    ("GET", "/api/v2/cart"),
    ("DELETE", "/api/v2/cart/items/{sku}"),
    ("POST", "/api/v2/checkout"),
    ("POST", "/api/v2/auth/login"),
    ("GET", "/api/v2/account/orders"),
    ("GET", "/healthz"),
];

const USER_AGENTS: &[&str] = &[
    "shop-ios/5.3.0",
    "shop-android/5.3.0",
    "shop-web/4.12.1",
    "shop-ios/5.2.2",
    "shop-web/4.12.0",
    "kube-probe/1.29",
];

fn log_line(rng: &mut Rng, index: usize) -> String {
    // About two lines a second, in bursts.
    let millis = LOGS_START * 1000 + index as u64 * 480 + rng.below(450);
    let (service, replicas) = {
        let total: u64 = SERVICES.iter().map(|s| s.1).sum();
        let mut at = rng.below(total);
        let mut chosen = &SERVICES[0];
        for s in SERVICES {
            if at < s.1 {
                chosen = s;
                break;
            }
            at -= s.1;
        }
        (chosen.0, chosen.2)
    };
    let mut level = *rng.weighted(LEVELS);
    let product = rng.pick_skewed(PRODUCTS);
    let user = 100_000 + rng.skewed(60_000) as u64 * 7;
    let message = match service {
        "api-gateway" => {
            let (method, route) = rng.pick_skewed(API_ROUTES);
            let path = route
                .replace("{sku}", product.sku)
                .replace("{cat}", product.category)
                .replace("{n}", &rng.range(1, 6).to_string())
                .replace("{q}", &rng.pick_skewed(SEARCHES).replace(' ', "+"));
            let status = match level {
                "ERROR" => *rng.pick(&[500, 502, 503, 504]),
                "WARN" => *rng.pick(&[400, 401, 404, 409, 429]),
                _ if *method == "POST" => *rng.pick(&[200, 201]),
                _ => *rng.weighted(&[(200, 90), (304, 10)]),
            };
            format!(
                "{method} {path} {status} {}ms {}B ip={} ua=\"{}\"",
                rng.range(2, if level == "ERROR" { 30_000 } else { 400 }),
                rng.range(0, 24_000),
                doc_ip(rng),
                rng.pick(USER_AGENTS)
            )
        }
        "catalog-svc" => match level {
            "DEBUG" => format!(
                "cache miss key=product:{}:v3 lang={} ttl=300",
                product.sku,
                rng.pick(&["de", "en", "fr", "es", "it", "nl"])
            ),
            "WARN" => format!(
                "slow query {}ms: SELECT p.* FROM products p JOIN prices c ON c.sku = p.sku WHERE p.category = $1 (category={})",
                rng.range(500, 4000),
                product.category
            ),
            "ERROR" => format!(
                "failed to render product {}: image service returned 503 after {} attempts",
                product.sku,
                rng.range(2, 3)
            ),
            _ => format!(
                "served product {} variant={} stock={} price_cents={}",
                product.sku,
                rng.pick(&["default", "size-42", "size-M", "color-blue", "color-black"]),
                rng.below(250),
                product.cents
            ),
        },
        "checkout-api" => {
            let cart = rng.hex(12);
            match level {
                "WARN" => format!(
                    "coupon rejected cart=c_{cart} code={} reason=\"{}\"",
                    rng.pick(&["SPRING10", "WELCOME15", "FREESHIP", "XMAS23"]),
                    rng.pick(&["expired", "minimum order value not reached", "already used"])
                ),
                "ERROR" => format!(
                    "checkout failed cart=c_{cart} user={user} error=\"payments-svc: context deadline exceeded\""
                ),
                "DEBUG" => format!(
                    "recalculated cart=c_{cart} items={} subtotal={} shipping={}",
                    rng.range(1, 5),
                    money(product.cents * rng.range(1, 3)),
                    money(*rng.pick(&[0, 495]))
                ),
                _ => format!(
                    "order placed order=ORD-24-{} user={user} items={} total={} currency=EUR",
                    310_000 + index as u64 / 2,
                    rng.range(1, 4),
                    money(product.cents * rng.range(1, 3))
                ),
            }
        }
        "search-svc" => {
            let query = rng.pick_skewed(SEARCHES);
            match level {
                "WARN" | "ERROR" => {
                    level = "WARN";
                    format!(
                        "query took {}ms (budget 250ms) q=\"{query}\" shards=6 timed_out=2",
                        rng.range(300, 2500)
                    )
                }
                _ => format!(
                    "q=\"{query}\" hits={} took={}ms page={} lang={}",
                    rng.below(140),
                    rng.range(3, 90),
                    rng.range(1, 4),
                    rng.pick(&["de", "en", "fr", "es"])
                ),
            }
        }
        "auth-svc" => match level {
            "WARN" => format!(
                "login failed user={user} ip={} reason=bad_password attempts={}",
                doc_ip(rng),
                rng.range(1, 5)
            ),
            "ERROR" => format!(
                "rate limit exceeded ip={} limit=20/min window=60s blocked_for=300s",
                doc_ip(rng)
            ),
            "DEBUG" => format!(
                "token refreshed user={user} session=s_{} expires_in=3600",
                rng.hex(10)
            ),
            _ => format!(
                "login ok user={user} method={} mfa={} ip={}",
                rng.weighted(&[("password", 70), ("sso", 18), ("magic_link", 12)]),
                rng.chance(25),
                doc_ip(rng)
            ),
        },
        "payments-svc" => {
            let amount = money(product.cents * rng.range(1, 3));
            let payment = format!("pay_{}", rng.hex(14));
            match level {
                "WARN" => format!(
                    "payment declined id={payment} amount={amount} EUR code=insufficient_funds"
                ),
                "ERROR" => format!(
                    "provider timeout id={payment} provider=cardgate after=10000ms retry=1/3"
                ),
                _ => format!(
                    "payment authorized id={payment} amount={amount} EUR method={} 3ds={}",
                    rng.weighted(&[("card", 60), ("paypal", 22), ("klarna", 10), ("apple_pay", 5)]),
                    rng.chance(60)
                ),
            }
        }
        "inventory-svc" => match level {
            "WARN" | "ERROR" => format!(
                "low stock sku={} warehouse={} on_hand={} reorder_point=25",
                product.sku,
                rng.pick(&["DE-HAM-1", "NL-VNL-2", "PL-POZ-1"]),
                rng.below(25)
            ),
            _ => format!(
                "reserved sku={} qty={} warehouse={} order=ORD-24-{}",
                product.sku,
                rng.range(1, 3),
                rng.pick(&["DE-HAM-1", "NL-VNL-2", "PL-POZ-1"]),
                310_000 + index as u64 / 2
            ),
        },
        "email-worker" => match level {
            "WARN" | "ERROR" => format!(
                "delivery deferred template={} to=***@{} smtp=\"451 4.7.1 try again later\"",
                rng.pick(&["order_confirmation", "shipping_update", "password_reset"]),
                rng.weighted(MAIL_DOMAINS)
            ),
            _ => format!(
                "sent template={} to=***@{} message_id=<{}@mail.shop.example>",
                rng.pick(&["order_confirmation", "shipping_update", "password_reset", "welcome"]),
                rng.weighted(MAIL_DOMAINS),
                rng.hex(16)
            ),
        },
        "scheduler" => {
            level = if level == "ERROR" { "ERROR" } else { "INFO" };
            let job = rng.pick(&["sync-prices", "expire-carts", "rebuild-sitemap", "export-orders"]);
            if level == "ERROR" {
                format!("job {job} failed after {}s: exit status 1", rng.range(1, 600))
            } else {
                format!(
                    "job {job} finished in {}ms rows={}",
                    rng.range(40, 90_000),
                    rng.below(20_000)
                )
            }
        }
        other => unreachable!("service {other}"),
    };
    format!(
        "{} {level:<5} {service}[{}] req={} {message}",
        iso_millis(millis),
        rng.below(replicas),
        rng.hex(16)
    )
}

// ---------------------------------------------------------------------------------------------
// orders_csv.txt: one order per line, no header:
//
//   order_id,created_at,customer,email,address,postcode,city,country,items,item_count,
//   subtotal,shipping,total,currency,status

const STATUSES: &[(&str, u64)] = &[
    ("delivered", 45),
    ("shipped", 18),
    ("paid", 12),
    ("pending", 8),
    ("cancelled", 7),
    ("refunded", 5),
    ("returned", 5),
];

/// A CSV field: quoted (with doubled quotes) when it holds a comma, a quote or a line break.
fn csv<S: AsRef<str> + ?Sized>(field: &S) -> String {
    let field = field.as_ref();
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

fn order(rng: &mut Rng, index: usize) -> String {
    // An order every 20 minutes or so, from February into March.
    let secs = ORDERS_START + index as u64 * 1200 + rng.below(1200);
    let country = country(rng);
    let first = rng.pick(country.first_names);
    let last = rng.pick(country.last_names);
    let email = match rng.below(4) {
        0 => format!("{}{}", ascii_slug(first), rng.range(1, 99)),
        1 => format!("{}.{}", ascii_slug(first), ascii_slug(last)),
        2 => format!("{}{}", &ascii_slug(first)[..1], ascii_slug(last)),
        _ => format!(
            "{}_{}{}",
            ascii_slug(last),
            ascii_slug(first),
            rng.range(70, 99)
        ),
    };
    let email = format!("{email}@{}", rng.weighted(MAIL_DOMAINS));
    let street = rng.pick(country.streets);
    let number = rng.skewed(180) + 1;
    let address = match (country.number_first, country.code) {
        (true, _) => format!("{number} {street}"),
        (false, "ES") => format!(
            "{street}, {number}{}",
            if rng.chance(60) {
                format!(", {}º {}", rng.range(1, 8), rng.pick(&["A", "B", "C", "D"]))
            } else {
                String::new()
            }
        ),
        (false, _) => format!("{street} {number}"),
    };
    let address = if country.code == "US" && rng.chance(30) {
        format!("{address}, Apt {}", rng.range(1, 40))
    } else {
        address
    };
    let mut items = String::new();
    let mut count = 0;
    let mut subtotal = 0;
    for i in 0..*rng.weighted(&[(1, 55), (2, 30), (3, 15)]) {
        let product = rng.pick_skewed(PRODUCTS);
        let qty = *rng.weighted(&[(1, 85), (2, 12), (3, 3)]);
        if i > 0 {
            items.push('|');
        }
        let _ = write!(items, "{}x{qty}", product.sku);
        count += qty;
        subtotal += price_in(product, country) * qty;
    }
    // Free shipping from 50 (in the customer's currency, roughly).
    let shipping = if subtotal * 1000 / country.per_mille >= 5000 {
        0
    } else {
        495 * country.per_mille / 1000
    };
    [
        (2_400_000 + index as u64).to_string(),
        iso_seconds(secs),
        csv(&format!("{first} {last}")),
        csv(&email),
        csv(&address),
        rng.pattern(country.postcode),
        csv(rng.pick_skewed(country.cities)),
        country.code.to_string(),
        items,
        count.to_string(),
        money(subtotal),
        money(shipping),
        money(subtotal + shipping),
        country.currency.to_string(),
        rng.weighted(STATUSES).to_string(),
    ]
    .join(",")
}
