#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Fill a libvirt domain template of examples/libvirt/ (scripts/libvirt-guest).

  libvirt_xml.py TEMPLATE OUT --firmware DIR [--firmware DIR ...] KEY=VALUE ...

Every @KEY@ of the template is replaced by VALUE (XML-escaped);
@FIRMWARE_ARGS@ becomes one pair of <qemu:arg> (-L DIR) per --firmware.
A placeholder left without a value is an error that names it.
"""
import argparse
import re
import sys
from xml.sax.saxutils import quoteattr, escape


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("template")
    ap.add_argument("out")
    ap.add_argument("--firmware", action="append", default=[])
    ap.add_argument("values", nargs="*", metavar="KEY=VALUE")
    args = ap.parse_intermixed_args()
    values = {}
    for item in args.values:
        key, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Z_]+", key):
            sys.exit(f"libvirt_xml.py: '{item}' is not KEY=VALUE")
        values[key] = escape(value, {"'": "&apos;", '"': "&quot;"})
    values["FIRMWARE_ARGS"] = "\n".join(
        f"    <qemu:arg value='-L'/><qemu:arg value={quoteattr(d)}/>" for d in args.firmware)
    text = open(args.template, encoding="utf-8").read()
    # Placeholders inside the leading comment are documentation, not values.
    body_start = text.find("<domain")
    head, body = text[:body_start], text[body_start:]
    missing = sorted(set(re.findall(r"@([A-Z_]+)@", body)) - values.keys())
    if missing:
        sys.exit(f"libvirt_xml.py: {args.template} needs values for: {', '.join(missing)}")
    body = re.sub(r"@([A-Z_]+)@", lambda m: values[m.group(1)], body)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(head + body)


if __name__ == "__main__":
    main()
