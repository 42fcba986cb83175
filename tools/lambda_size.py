"""Print the unzipped size of each built function and layer; fail past Lambda's 250 MB limit.

Usage: python tools/lambda_size.py [BUILD_DIR]   (default .aws-sam/build, as written by `sam build`)

Lambda caps a function's unzipped code plus all its layers at 262,144,000 bytes. The built template
names each function's code folder (CodeUri) and its layers (function Layers or Globals), and each
local layer's folder (ContentUri). Needs PyYAML (the SAM CLI's virtualenv has it).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import yaml

LIMIT_BYTES = 262_144_000  # 250 MB, function + layers, unzipped
MB = 1024 * 1024


class _Loader(yaml.SafeLoader):
    """SafeLoader that turns CloudFormation short-form tags (!Ref X) into {"Ref": X}-like dicts."""


def _intrinsic(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    name = "Ref" if suffix == "Ref" else f"Fn::{suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name: value}


_Loader.add_multi_constructor("!", _intrinsic)


def tree_bytes(root: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def main(argv: list[str]) -> int:
    build_dir = Path(argv[1] if len(argv) > 1 else ".aws-sam/build")
    template_path = build_dir / "template.yaml"
    if not template_path.is_file():
        print(f"no built template at {template_path}: run sam build first", file=sys.stderr)
        return 2
    template = yaml.load(template_path.read_text(), Loader=_Loader)  # a SafeLoader subclass
    resources: dict[str, Any] = template.get("Resources", {})
    global_layers = ((template.get("Globals") or {}).get("Function") or {}).get("Layers") or []

    layers: dict[str, int] = {}
    for name, res in resources.items():
        if res.get("Type") in ("AWS::Serverless::LayerVersion", "AWS::Lambda::LayerVersion"):
            props = res.get("Properties") or {}
            uri = props.get("ContentUri") or props.get("Content")
            if isinstance(uri, str) and (build_dir / uri).is_dir():
                layers[name] = tree_bytes(build_dir / uri)
                print(f"layer    {name:<24} {layers[name] / MB:8.2f} MB unzipped")

    failed = False
    for name, res in resources.items():
        if res.get("Type") != "AWS::Serverless::Function":
            continue
        props = res.get("Properties") or {}
        uri = props.get("CodeUri")
        if not isinstance(uri, str) or not (build_dir / uri).is_dir():
            continue
        code = tree_bytes(build_dir / uri)
        refs = [*global_layers, *(props.get("Layers") or [])]
        used = [ref["Ref"] for ref in refs if isinstance(ref, dict) and ref.get("Ref") in layers]
        total = code + sum(layers[r] for r in used)
        verdict = "ok" if total <= LIMIT_BYTES else "OVER THE 250 MB LIMIT"
        with_layers = "+".join(used) or "no layer"
        print(
            f"function {name:<24} {code / MB:8.2f} MB unzipped ({code / 1024:.1f} KB);"
            f" with {with_layers}: {total / MB:.2f} MB of 250 MB ({verdict})"
        )
        failed |= total > LIMIT_BYTES
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
