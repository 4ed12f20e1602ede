"""Write seclake/web/attack-techniques.json: MITRE ATT&CK Enterprise technique
ids -> names, for the web interface's labels ("T1059.001 PowerShell").

    python scripts/attack-techniques.py <cti checkout or git dir> [commit]

Reads the STIX bundles of mitre/cti's enterprise-attack/attack-pattern/ (one
per technique) from a git repository (`git show`, so a bare mirror does) and
keeps, per technique, its ATT&CK id, its name and whether MITRE revoked or
deprecated it (old Sigma rules still name some). The terms MITRE's licence
asks a copy to carry are in the file ("_licence") and in
seclake/web/ATTACK-NOTICE.txt.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "seclake" / "web" / "attack-techniques.json"
LICENCE = (
    "From MITRE ATT&CK(R) Enterprise (https://attack.mitre.org), {version}. "
    "(c) 2025 The MITRE Corporation. This work is reproduced and distributed with the permission of "
    "The MITRE Corporation, under the ATT&CK Terms of Use "
    "(https://attack.mitre.org/resources/legal-and-branding/terms-of-use/); see ATTACK-NOTICE.txt beside this file."
)


def main(repo: str, commit: str = "HEAD") -> None:
    git = ["git", f"--git-dir={repo}"] if not (Path(repo) / ".git").exists() else ["git", "-C", repo]
    version = subprocess.run([*git, "log", "-1", "--format=%s", commit], check=True, capture_output=True,
                             text=True).stdout.strip()
    names = subprocess.run([*git, "ls-tree", "--name-only", commit, "enterprise-attack/attack-pattern/"],
                           check=True, capture_output=True, text=True).stdout.split()
    techniques: dict[str, dict[str, object]] = {}
    for name in names:
        bundle = json.loads(subprocess.run([*git, "show", f"{commit}:{name}"], check=True, capture_output=True).stdout)
        for obj in bundle["objects"]:
            if obj.get("type") != "attack-pattern":
                continue
            ids = [r["external_id"] for r in obj.get("external_references", []) if r.get("source_name") == "mitre-attack"]
            if not ids:
                continue
            entry: dict[str, object] = {"name": obj["name"]}
            if obj.get("revoked") or obj.get("x_mitre_deprecated"):
                entry["deprecated"] = True
            # A live technique wins over a revoked object that kept its id.
            if ids[0] not in techniques or techniques[ids[0]].get("deprecated"):
                techniques[ids[0]] = entry
    ids = sorted(techniques)
    head = {"_about": "MITRE ATT&CK Enterprise technique id -> name (scripts/attack-techniques.py); "
                      "deprecated: the ids MITRE revoked or deprecated",
            "_licence": LICENCE.format(version=version)}
    # One technique a line: the file diffs well when MITRE publishes a new version.
    lines = [f"{json.dumps(k)}: {json.dumps(techniques[k]['name'], ensure_ascii=False)}" for k in ids]
    deprecated = [k for k in ids if techniques[k].get("deprecated")]
    text = "{\n" + "".join(f"{json.dumps(k)}: {json.dumps(v)},\n" for k, v in head.items())
    text += '"techniques": {\n' + ",\n".join(lines) + "\n},\n"
    text += f'"deprecated": {json.dumps(deprecated)}\n}}\n'
    json.loads(text)
    OUT.write_text(text)
    print(f"{OUT}: {len(techniques)} techniques ({version})")


if __name__ == "__main__":
    main(*sys.argv[1:])
