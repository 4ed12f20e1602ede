"""The fixed world the demo logs describe: tenants, people, machines, the internet.

Built once from a constant seed, so names and addresses do not change with the
generator seed: the seed varies the traffic, not the cast. Scenario values
(attackers, needles) are kept out of everything here, so a search for one of
them finds only its episode.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from functools import lru_cache

from seclake.demo.zipf import Zipf

FIRST_NAMES = (
    "alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy",
    "mallory", "nina", "oscar", "peggy", "quinn", "rupert", "sybil", "trent", "ursula",
    "victor", "wendy", "xavier", "yasmin", "zoe", "amir", "bianca", "chen", "dmitri",
    "elena", "farah", "gustavo", "hana", "igor", "jamal", "keiko", "lars", "maria",
    "nikhil", "olga", "priya", "raj", "sofia", "tomas", "uma", "wei", "yusuf",
)
LAST_NAMES = (
    "smith", "johnson", "williams", "brown", "jones", "garcia", "miller", "davis",
    "rodriguez", "martinez", "hernandez", "lopez", "wilson", "anderson", "thomas",
    "taylor", "moore", "jackson", "martin", "lee", "perez", "thompson", "white",
    "harris", "sanchez", "clark", "ramirez", "lewis", "robinson", "walker", "young",
    "allen", "king", "wright", "scott", "torres", "nguyen", "hill", "flores", "green",
    "adams", "nelson", "baker", "hall", "rivera", "campbell", "mitchell", "carter",
    "roberts", "park", "kim", "patel", "singh", "kowalski", "novak", "schmidt",
)

# (domain, proxy category). Order is popularity: the Zipf rank.
DOMAINS = (
    ("www.google.com", "Search Engines"), ("outlook.office365.com", "Webmail"),
    ("login.microsoftonline.com", "Business"), ("teams.microsoft.com", "Business"),
    ("www.bing.com", "Search Engines"), ("update.googleapis.com", "Technology"),
    ("github.com", "Technology"), ("api.github.com", "Technology"),
    ("slack.com", "Business"), ("edge.microsoft.com", "Technology"),
    ("www.youtube.com", "Streaming Media"), ("zoom.us", "Business"),
    ("s3.amazonaws.com", "Cloud Storage"), ("fonts.googleapis.com", "Technology"),
    ("www.linkedin.com", "Social Networking"), ("cdn.jsdelivr.net", "Technology"),
    ("ocsp.digicert.com", "Technology"), ("graph.microsoft.com", "Business"),
    ("drive.google.com", "Cloud Storage"), ("www.salesforce.com", "Business"),
    ("clients4.google.com", "Technology"), ("settings-win.data.microsoft.com", "Technology"),
    ("www.dropbox.com", "Cloud Storage"), ("pypi.org", "Technology"),
    ("registry.npmjs.org", "Technology"), ("www.wikipedia.org", "Reference"),
    ("www.bbc.co.uk", "News"), ("www.nytimes.com", "News"),
    ("www.reddit.com", "Social Networking"), ("twitter.com", "Social Networking"),
    ("www.facebook.com", "Social Networking"), ("www.instagram.com", "Social Networking"),
    ("open.spotify.com", "Streaming Media"), ("www.netflix.com", "Streaming Media"),
    ("www.amazon.com", "Shopping"), ("www.ebay.com", "Shopping"),
    ("stackoverflow.com", "Technology"), ("docs.python.org", "Technology"),
    ("hub.docker.com", "Technology"), ("www.atlassian.com", "Business"),
    ("acme-corp.atlassian.net", "Business"), ("www.okta.com", "Business"),
    ("ctldl.windowsupdate.com", "Technology"), ("dl.google.com", "Technology"),
    ("www.cloudflare.com", "Technology"), ("www.apple.com", "Technology"),
    ("weather.com", "News"), ("www.cnn.com", "News"), ("news.ycombinator.com", "News"),
    ("mail.google.com", "Webmail"), ("www.workday.com", "Business"),
    ("www.zendesk.com", "Business"), ("www.paypal.com", "Finance"),
    ("www.chase.com", "Finance"), ("www.booking.com", "Travel"),
    ("www.expedia.com", "Travel"), ("www.twitch.tv", "Streaming Media"),
    ("discord.com", "Social Networking"), ("www.notion.so", "Business"),
    ("figma.com", "Business"), ("translate.google.com", "Reference"),
    ("www.imdb.com", "Entertainment"), ("www.espn.com", "Sports"),
    ("pastebin.com", "Uncategorized"), ("transfer.sh", "Uncategorized"),
    ("telemetry.example-vendor.net", "Uncategorized"), ("ipinfo.io", "Technology"),
)

# (service, destination port, IP protocol number). Order is popularity.
SERVICES = (
    ("HTTPS", 443, 6), ("DNS", 53, 17), ("HTTP", 80, 6), ("NTP", 123, 17),
    ("SMB", 445, 6), ("LDAP", 389, 6), ("KERBEROS", 88, 6), ("SMTP", 25, 6),
    ("IMAPS", 993, 6), ("SSH", 22, 6), ("RDP", 3389, 6), ("HTTPS-ALT", 8443, 6),
    ("HTTP-PROXY", 8080, 6), ("MS-SQL", 1433, 6), ("MYSQL", 3306, 6),
    ("SNMP", 161, 17), ("SYSLOG", 514, 17), ("QUIC", 443, 17), ("PING", 0, 1),
    ("LDAPS", 636, 6), ("POSTGRES", 5432, 6), ("WINRM", 5985, 6),
)

USER_AGENTS = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0.2210.91",
    "Microsoft Office/16.0 (Windows NT 10.0; Microsoft Outlook 16.0.17126; Pro)",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_2_1) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Safari/605.1.15",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0",
    "Microsoft-CryptoAPI/10.0",
    "Windows-Update-Agent/10.0.10011.16384 Client-Protocol/2.50",
    "python-requests/2.31.0",
    "curl/8.4.0",
    "Go-http-client/1.1",
    "Slack/4.36.140 (Windows 10)",
    "Zoom/5.17.1",
)

URL_PATHS = (
    "/", "/index.html", "/api/v1/status", "/search?q=quarterly+report", "/favicon.ico",
    "/static/js/app.js", "/static/css/main.css", "/login", "/oauth2/v2.0/token",
    "/owa/", "/mail/u/0/", "/api/v2/messages", "/images/logo.png", "/wp-content/uploads/hero.jpg",
    "/v1/events", "/download/installer.msi", "/simple/requests/", "/watch?v=dQw4w9WgXcQ",
    "/en-us/docs", "/health",
)

# (sid, message, severity 0-10, category, protocol, destination port or 0 for any)
SIGNATURES = (
    (2210045, "SURICATA STREAM Packet with invalid ack", 3, "Generic Protocol Command Decode", "TCP", 0),
    (2027757, "ET DNS Query for .to TLD", 3, "Potentially Bad Traffic", "UDP", 53),
    (2013504, "ET POLICY GNU/Linux APT User-Agent Outbound likely related to package management", 2, "Not Suspicious Traffic", "TCP", 80),
    (2221010, "SURICATA HTTP unable to match response to request", 3, "Generic Protocol Command Decode", "TCP", 80),
    (2033966, "ET INFO Observed DNS Query to .cloud TLD", 2, "Misc activity", "UDP", 53),
    (2016149, "ET INFO Session Traversal Utilities for NAT (STUN Binding Request)", 2, "Attempted User Privilege Gain", "UDP", 3478),
    (2230010, "SURICATA TLS invalid record/traffic", 3, "Generic Protocol Command Decode", "TCP", 443),
    (2013028, "ET POLICY curl User-Agent Outbound", 2, "Attempted Information Leak", "TCP", 80),
    (2100366, "GPL ICMP_INFO PING *NIX", 1, "Misc activity", "ICMP", 0),
    (2010935, "ET SCAN Suspicious inbound to MSSQL port 1433", 5, "Potentially Bad Traffic", "TCP", 1433),
    (2010937, "ET SCAN Suspicious inbound to mySQL port 3306", 5, "Potentially Bad Traffic", "TCP", 3306),
    (2001219, "ET SCAN Potential SSH Scan", 5, "Attempted Information Leak", "TCP", 22),
    (2012648, "ET POLICY Dropbox.com Offsite File Backup in Use", 2, "Potential Corporate Privacy Violation", "TCP", 443),
    (2025275, "ET INFO Windows OS Submitting USB Metadata to Microsoft", 1, "Misc activity", "TCP", 80),
)

# (process image, parent image, command line, signed). Order is popularity.
PROCESSES = (
    (r"C:\Program Files\Google\Chrome\Application\chrome.exe", r"C:\Windows\explorer.exe",
     r'"C:\Program Files\Google\Chrome\Application\chrome.exe" --type=renderer --lang=en-US', True),
    (r"C:\Windows\System32\svchost.exe", r"C:\Windows\System32\services.exe",
     r"C:\Windows\system32\svchost.exe -k netsvcs -p -s Schedule", True),
    (r"C:\Program Files (x86)\Microsoft\Edge\Application\msedge.exe", r"C:\Windows\explorer.exe",
     r'"C:\Program Files (x86)\Microsoft\Edge\Application\msedge.exe" --type=utility --utility-sub-type=network.mojom.NetworkService', True),
    (r"C:\Program Files\Microsoft Office\root\Office16\OUTLOOK.EXE", r"C:\Windows\explorer.exe",
     r'"C:\Program Files\Microsoft Office\root\Office16\OUTLOOK.EXE" /recycle', True),
    (r"C:\Users\Public\AppData\Local\Microsoft\Teams\current\Teams.exe", r"C:\Windows\explorer.exe",
     r'"Teams.exe" --system-initiated', True),
    (r"C:\Windows\System32\conhost.exe", r"C:\Windows\System32\cmd.exe",
     r"\??\C:\Windows\system32\conhost.exe 0xffffffff -ForceV1", True),
    (r"C:\Windows\System32\taskhostw.exe", r"C:\Windows\System32\svchost.exe",
     r"taskhostw.exe -RegisterDevice -ProtectionStateChanged -FreeNetworkOnly", True),
    (r"C:\Windows\System32\SearchIndexer.exe", r"C:\Windows\System32\services.exe",
     r"C:\Windows\system32\SearchIndexer.exe /Embedding", True),
    (r"C:\ProgramData\Microsoft\Windows Defender\Platform\4.18.23110.3-0\MsMpEng.exe", r"C:\Windows\System32\services.exe",
     r'"C:\ProgramData\Microsoft\Windows Defender\Platform\4.18.23110.3-0\MsMpEng.exe"', True),
    (r"C:\Program Files\Microsoft Office\root\Office16\EXCEL.EXE", r"C:\Windows\explorer.exe",
     r'"C:\Program Files\Microsoft Office\root\Office16\EXCEL.EXE" "\\fs01\finance\Q4 forecast.xlsx"', True),
    (r"C:\Program Files\Microsoft Office\root\Office16\WINWORD.EXE", r"C:\Windows\explorer.exe",
     r'"C:\Program Files\Microsoft Office\root\Office16\WINWORD.EXE" /n "C:\Users\Public\Documents\minutes.docx"', True),
    (r"C:\Windows\System32\cmd.exe", r"C:\Windows\explorer.exe",
     r'"C:\Windows\system32\cmd.exe" /c ipconfig /all', True),
    (r"C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe", r"C:\Windows\explorer.exe",
     r'"C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe" -Command Get-ChildItem -Path C:\Users\Public', True),
    (r"C:\Users\Public\AppData\Local\Microsoft\OneDrive\OneDrive.exe", r"C:\Windows\explorer.exe",
     r'"OneDrive.exe" /background', True),
    (r"C:\Windows\System32\notepad.exe", r"C:\Windows\explorer.exe",
     r'"C:\Windows\system32\notepad.exe" C:\Users\Public\Desktop\todo.txt', True),
    (r"C:\Program Files\Git\cmd\git.exe", r"C:\Program Files\Microsoft VS Code\Code.exe",
     r"git.exe fetch --all --prune", True),
    (r"C:\Program Files\Microsoft VS Code\Code.exe", r"C:\Windows\explorer.exe",
     r'"C:\Program Files\Microsoft VS Code\Code.exe" --type=utility', True),
    (r"C:\Windows\System32\gpupdate.exe", r"C:\Windows\System32\svchost.exe",
     r"gpupdate.exe /target:computer", True),
    (r"C:\Windows\System32\wbem\WmiPrvSE.exe", r"C:\Windows\System32\svchost.exe",
     r"C:\Windows\system32\wbem\wmiprvse.exe -Embedding", True),
    (r"C:\Users\Public\Downloads\PDFConverterSetup.exe", r"C:\Windows\explorer.exe",
     r'"C:\Users\Public\Downloads\PDFConverterSetup.exe" /S', False),
)

# Usernames internet scanners try against exposed SSH. Order is popularity.
SSH_GUESSES = (
    "admin", "root", "test", "user", "ubuntu", "oracle", "postgres", "guest", "git",
    "ftpuser", "pi", "support", "deploy", "hadoop", "nagios", "mysql", "jenkins",
)

LINUX_USERS = ("deploy", "ansible", "ubuntu", "root", "backup", "jenkins")


def sha256_of(text: str) -> str:
    """A stable stand-in for a file hash: the same image always has the same hash."""
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Server:
    name: str
    ip: str


@dataclass(frozen=True)
class Tenant:
    """One customer: its network, machines and people."""

    name: str
    weight: float
    domain: str  # DNS domain, e.g. acme.local
    netbios: str  # Windows domain, e.g. ACME
    prefix: str  # first two octets of the internal /16
    public_ip: str  # the address the internet sees
    firewalls: Zipf[str]
    dns_server: Server
    proxy: Server
    dcs: Zipf[Server]
    linux: Zipf[Server]
    jump_host: Server
    edr_sensor: str
    ids_sensor: str
    flow_exporter: str
    workstations: tuple[str, ...]
    workstation_ips: tuple[str, ...]
    owners: tuple[str, ...]  # primary user of each workstation
    ws: Zipf[int]  # index into the three tuples above
    users: Zipf[str]
    servers: Zipf[Server]


def _ip_hosts(rng: random.Random, prefixes: tuple[str, ...], count: int) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < count:
        ip = f"{rng.choice(prefixes)}.{rng.randrange(1, 255)}.{rng.randrange(1, 255)}"
        if ip not in seen:
            seen.add(ip)
            out.append(ip)
    return out


def _tenant(rng: random.Random, name: str, weight: float, prefix: str, public_ip: str,
            n_ws: int, n_users: int) -> Tenant:
    netbios = name.upper()
    short = {"acme": "ACME", "globex": "GLX", "initech": "INI"}[name]
    domain = f"{name}.local"
    people = list(dict.fromkeys(f"{f[0]}{l}" for f in FIRST_NAMES for l in LAST_NAMES))
    rng.shuffle(people)
    users = people[:n_users]
    workstations = tuple(f"{short}-WS-{i:04d}" for i in range(1, n_ws + 1))
    ws_ips = tuple(f"{prefix}.{20 + i // 240}.{10 + i % 240}" for i in range(n_ws))
    owners = tuple(users[i % n_users] for i in range(n_ws))
    order = list(range(n_ws))
    rng.shuffle(order)
    servers = [
        Server(f"{short}-FS01", f"{prefix}.0.20"), Server(f"{short}-SQL01", f"{prefix}.0.30"),
        Server(f"{short}-WEB01", f"{prefix}.0.40"), Server(f"{short}-MAIL01", f"{prefix}.0.25"),
        Server(f"{short}-APP01", f"{prefix}.0.50"), Server(f"{short}-APP02", f"{prefix}.0.51"),
        Server(f"{short}-PRINT01", f"{prefix}.0.60"),
    ]
    dcs = [Server(f"{short}-DC01", f"{prefix}.0.10"), Server(f"{short}-DC02", f"{prefix}.0.11")]
    linux = [Server(f"{name}-bastion-01", f"{prefix}.0.100"), Server(f"{name}-web-01", f"{prefix}.0.101"),
             Server(f"{name}-web-02", f"{prefix}.0.102"), Server(f"{name}-db-01", f"{prefix}.0.110"),
             Server(f"{name}-ci-01", f"{prefix}.0.120")]
    return Tenant(
        name=name, weight=weight, domain=domain, netbios=netbios, prefix=prefix, public_ip=public_ip,
        firewalls=Zipf([f"{name}-fgt-01", f"{name}-fgt-02"], 1.5),
        dns_server=Server(f"ns1.{domain}", f"{prefix}.0.53"),
        proxy=Server(f"proxy01.{domain}", f"{prefix}.0.80"),
        dcs=Zipf(dcs, 1.0),
        linux=Zipf(linux, 1.2),
        jump_host=Server(f"{short}-JUMP01", f"{prefix}.0.5"),
        edr_sensor=f"edr-{name}",
        ids_sensor=f"{name}-ids-01",
        flow_exporter=f"{prefix}.0.1",
        workstations=workstations, workstation_ips=ws_ips, owners=owners,
        ws=Zipf(order, 0.9),
        users=Zipf(users, 1.0),
        servers=Zipf(servers, 1.0),
    )


@dataclass(frozen=True)
class World:
    tenants: tuple[Tenant, ...]
    external_ips: Zipf[str]  # servers on the internet that users talk to
    scanners: Zipf[str]  # internet noise: hosts that knock on exposed services
    domains: Zipf[tuple[str, str]]
    services: Zipf[tuple[str, int, int]]
    user_agents: Zipf[str]
    url_paths: Zipf[str]
    signatures: Zipf[tuple[int, str, int, str, str, int]]
    processes: Zipf[tuple[str, str, str, bool]]
    ssh_guesses: Zipf[str]
    linux_users: Zipf[str]


@lru_cache(maxsize=1)
def world() -> World:
    """The one demo world. Cached: it is immutable and costs a few milliseconds."""
    rng = random.Random("seclake-demo-vocabulary-v1")
    tenants = (
        _tenant(rng, "acme", 0.5, "10.1", "192.0.2.10", 260, 220),
        _tenant(rng, "globex", 0.3, "10.2", "192.0.2.20", 150, 130),
        _tenant(rng, "initech", 0.2, "172.16", "192.0.2.30", 90, 80),
    )
    # Big cloud and CDN ranges: what outbound traffic mostly goes to.
    providers = ("13.107", "20.190", "52.96", "142.250", "104.16", "151.101", "172.217",
                 "35.186", "31.13", "157.240", "17.253", "185.199", "40.126", "23.215")
    # Ranges internet-wide scanners are commonly seen from.
    noisy = ("45.134", "61.177", "80.94", "185.220", "218.92", "141.98", "89.248", "193.32", "179.43")
    return World(
        tenants=tenants,
        external_ips=Zipf(_ip_hosts(rng, providers, 3000), 1.05),
        scanners=Zipf(_ip_hosts(rng, noisy, 600), 1.1),
        domains=Zipf(DOMAINS, 1.0),
        services=Zipf(SERVICES, 1.3),
        user_agents=Zipf(USER_AGENTS, 1.2),
        url_paths=Zipf(URL_PATHS, 1.0),
        signatures=Zipf(SIGNATURES, 1.0),
        processes=Zipf(PROCESSES, 1.0),
        ssh_guesses=Zipf(SSH_GUESSES, 1.2),
        linux_users=Zipf(LINUX_USERS, 1.0),
    )


class Source:
    """A kind of demo log line (``Sshd``, ``Firewall``, ``Okta``...): its
    vendor and dataset, and ``line(ts, minute, tenant, rnd)`` in each subclass."""

    vendor: str
    dataset: str

    def __init__(self, world: World) -> None:
        self.w = world
