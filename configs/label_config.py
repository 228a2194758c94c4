"""A project's label config, parsed once and asked questions.

Wraps ``label_studio_sdk.label_interface.LabelInterface`` and adds what it lacks:
``Repeater`` expansion (``verdict_{{idx}}`` becomes ``verdict_0``, ``verdict_1``... from the
task's list) and resolution of an object's text from task data (``$lines[{{idx}}].text``).
"""

from __future__ import annotations

import hashlib
import re
import sys
import types
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from lxml import etree

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_VALUE_PATH = re.compile(r"^\$([\w-]+)((?:\[\d+\]|\.[\w-]+)*)$")
_PATH_PART = re.compile(r"\[(\d+)\]|\.([\w-]+)")


class LabelConfigError(ValueError):
    """The label config does not parse."""


@dataclass(frozen=True)
class Control:
    name: str
    tag: str
    to_name: str
    labels: tuple[str, ...] = ()
    attrs: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    repeater: str | None = None  # the data key of the enclosing Repeater (``lines``)
    flag: str | None = None  # the Repeater's index flag (``idx``)

    @property
    def per_region(self) -> bool:
        return self.attrs.get("perRegion", "").lower() == "true"

    @property
    def dynamic(self) -> str | None:
        """The data key of dynamic labels/choices (``value="$options"``), if any."""
        value = self.attrs.get("value", "")
        return value[1:] if value.startswith("$") else None

    @property
    def required(self) -> bool:
        return self.attrs.get("required", "").lower() == "true"

    def expand(self, index: int) -> Control:
        if not self.flag:
            return self
        token = "{{" + self.flag + "}}"
        return Control(
            name=self.name.replace(token, str(index)),
            tag=self.tag,
            to_name=self.to_name.replace(token, str(index)),
            labels=self.labels,
            attrs=self.attrs,
            repeater=self.repeater,
            flag=None,
        )


@dataclass(frozen=True)
class TextObject:
    name: str
    tag: str
    value: str  # "$summary", "$lines[{{idx}}].text", or a literal
    flag: str | None = None
    value_type: str = "text"  # valueType="url": the value is a URL whose content is shown

    def expand(self, index: int) -> TextObject:
        if not self.flag:
            return self
        token = "{{" + self.flag + "}}"
        return TextObject(
            self.name.replace(token, str(index)), self.tag, self.value.replace(token, str(index)), None, self.value_type
        )

    def resolve(self, data: dict[str, Any]) -> Any:
        """The object's content for a task, or None if the data lacks it."""
        match = _VALUE_PATH.match(self.value)
        if not match:
            return None if self.value.startswith("$") else self.value
        current: Any = data.get(match.group(1))
        for index, key in _PATH_PART.findall(match.group(2)):
            try:
                current = current[int(index)] if index else current[key]
            except (KeyError, IndexError, TypeError):
                return None
        return current


@dataclass
class LabelConfig:
    xml: str
    controls: list[Control]
    objects: dict[str, TextObject]
    repeater_keys: frozenset[str]  # data keys that Repeaters iterate over

    @cached_property
    def fingerprint(self) -> frozenset[str]:
        """What identifies the config's structure, independent of titles, colours, instructions:
        each control's tag, name and target, and each label value."""
        tokens = set()
        for c in self.controls:
            tokens.add(f"control:{c.tag}:{c.name}->{c.to_name}")
            tokens.update(f"label:{c.name}:{label}" for label in c.labels)
            if c.dynamic:
                tokens.add(f"dynamic:{c.name}:{c.dynamic}")
        for o in self.objects.values():
            if o.value.startswith("$"):
                tokens.add(f"object:{o.tag}:{o.name}={o.value}")
        return frozenset(tokens)

    @cached_property
    def digest(self) -> str:
        return hashlib.sha256("\n".join(sorted(self.fingerprint)).encode()).hexdigest()[:10]

    def expanded_controls(self, data: dict[str, Any]) -> dict[str, Control]:
        """Controls by name for one task, Repeater controls expanded over the task's list."""
        out: dict[str, Control] = {}
        for c in self.controls:
            if c.flag:
                items = data.get(c.repeater or "")
                for i in range(len(items) if isinstance(items, list) else 0):
                    e = c.expand(i)
                    out[e.name] = e
            else:
                out[c.name] = c
        return out

    def object_for(self, name: str) -> TextObject | None:
        """The object called ``name`` (``line_3`` finds the ``line_{{idx}}`` template)."""
        if name in self.objects:
            return self.objects[name]
        for obj in self.objects.values():
            if obj.flag:
                pattern = re.escape(obj.name).replace(re.escape("{{" + obj.flag + "}}"), r"(\d+)")
                m = re.fullmatch(pattern, name)
                if m:
                    return obj.expand(int(m.group(1)))
        return None

    def object_text(self, name: str, data: dict[str, Any]) -> str | None:
        obj = self.object_for(name)
        value = obj.resolve(data) if obj else None
        return value if isinstance(value, str) else None

    def data_keys(self) -> set[str]:
        """Top-level task data keys that the config reads."""
        keys = set()
        for obj in self.objects.values():
            m = _VALUE_PATH.match(obj.value)
            if m:
                keys.add(m.group(1))
        keys.update(self.repeater_keys)
        keys.update(c.dynamic for c in self.controls if c.dynamic)
        return keys


def _repeaters(root: etree._Element) -> dict[str, tuple[str, str]]:
    """Map each element name inside a Repeater to (flag, data key)."""
    found: dict[str, tuple[str, str]] = {}
    for rep in root.iter("Repeater"):
        on = rep.get("on", "")
        flag = _PLACEHOLDER.fullmatch(rep.get("indexFlag", "{{idx}}"))
        if not on.startswith("$") or not flag:
            continue
        for el in rep.iter():
            if el.get("name"):
                found[el.get("name")] = (flag.group(1), on[1:])
    return found


#: Configs longer than this are parsed anew each time rather than cached: a parsed config takes
#: about five times its text, and the backend keeps the big ones in its own bounded registry, where
#: their memory is counted; 16 cached taxonomies of 1 MB would hold 80 MB beside it.
CACHED_CONFIG_MAX_CHARS = 64 * 1024


def parse_label_config(xml: str) -> LabelConfig:
    """Parse a label config (cached by its text, unless it is over :data:`CACHED_CONFIG_MAX_CHARS`)."""
    return _parse_cached(xml) if len(xml) <= CACHED_CONFIG_MAX_CHARS else _parse(xml)


def parse_with_interface(xml: str) -> tuple[LabelConfig, Any]:
    """The parsed config and the SDK's ``LabelInterface`` it was read from, for a caller that
    needs more of the SDK's parse (aliases, JSON schema) and then drops it: one parse, not two
    (a config of many labels takes about 0.25 s per parse). Not cached."""
    root, interface = _interface(xml)
    return _from_interface(xml, root, interface), interface


#: Few: each entry holds a parsed config.
@lru_cache(maxsize=16)
def _parse_cached(xml: str) -> LabelConfig:
    return _parse(xml)


def _parse(xml: str) -> LabelConfig:
    return _from_interface(xml, *_interface(xml))


class _SampleDataFaker:
    """Stands for ``jsf.JSF`` in the SDK's label interface, which imports it at the top of its
    module only to make up sample task data (``LabelInterface.generate_sample_task``), which
    judgelab never asks for. ``jsf`` imports ``faker`` and ``smart_open``, and ``smart_open`` each
    of its cloud storage transports to register it (Azure's, Google Cloud's and boto3's clients,
    which Label Studio's server brings), paid at the first parse of every process (a backend's
    start, a CLI command): without them the interface imports in 0.61 s of CPU instead of 0.84 s
    (the transports left out, as before), about 1.2 s with everything. Made, it is the real ``JSF``,
    imported then."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        from jsf import JSF

        return JSF(*args, **kwargs)


def _label_interface() -> Any:
    """The SDK's ``LabelInterface`` class, its module imported with :class:`_SampleDataFaker` as
    ``jsf`` when nothing imported ``jsf`` before (the stand-in is in ``sys.modules`` only while
    the SDK imports: a later ``import jsf`` imports the real one)."""
    stand_in = None
    if "label_studio_sdk.label_interface.interface" not in sys.modules and "jsf" not in sys.modules:
        stand_in = types.ModuleType("jsf", "judgelab's stand-in while the SDK's label interface imports")
        stand_in.JSF = _SampleDataFaker
        sys.modules["jsf"] = stand_in
    try:
        from label_studio_sdk.label_interface import LabelInterface
    finally:
        if stand_in is not None and sys.modules.get("jsf") is stand_in:
            del sys.modules["jsf"]
    return LabelInterface


def preload_parser() -> None:
    """Import what parsing a config needs, for a process about to parse (a backend before it
    serves): the SDK's label interface takes about 0.6 s of CPU to import (:class:`_SampleDataFaker`),
    which would otherwise be paid by the first parse, inside its caller's deadline."""
    _label_interface()


def _interface(xml: str) -> tuple[etree._Element, Any]:
    """The config's XML tree and the SDK's ``LabelInterface`` of it (``LabelConfigError`` when
    it does not parse)."""
    # imported here, not with this module: every process importing it would pay the import,
    # parsing or not (a backend's --help or a bad setting, CLI commands that read no config)
    LabelInterface = _label_interface()  # noqa: N806 - the SDK's class

    try:
        root = etree.fromstring(xml.encode("utf-8"), parser=etree.XMLParser(resolve_entities=False))
        interface = LabelInterface(xml)
    except Exception as exc:  # LabelInterface raises many kinds of errors on bad XML
        raise LabelConfigError(f"label config does not parse: {exc}") from exc
    return root, interface


def _from_interface(xml: str, root: etree._Element, interface: Any) -> LabelConfig:
    in_repeater = _repeaters(root)
    controls = []
    for c in interface.controls:
        flag, key = in_repeater.get(c.name, (None, None))
        labels = tuple(str(v) for v in (c.labels or []))
        controls.append(
            Control(
                name=c.name,
                tag=c.tag,
                to_name=(c.to_name or [""])[0],
                labels=labels,
                attrs={k: str(v) for k, v in (c.attr or {}).items()},
                repeater=key,
                flag=flag,
            )
        )
    objects = {}
    for o in interface.objects:
        flag = in_repeater.get(o.name, (None, None))[0]
        value_type = str((o.attr or {}).get("valueType") or "text").strip().lower()
        objects[o.name] = TextObject(name=o.name, tag=o.tag, value=str(o.value or ""), flag=flag, value_type=value_type)
    repeater_keys = frozenset(key for _, key in in_repeater.values())
    return LabelConfig(xml=xml, controls=controls, objects=objects, repeater_keys=repeater_keys)
