"""`.ctxward/config.yaml`: defaults without a file; every mistake names the file and the key."""

from __future__ import annotations

import pytest

from ctxward.core.config import BankConfig, Config, DispatchConfig, InjectionConfig, load
from ctxward.core.project import Project
from ctxward.errors import BadInput


@pytest.fixture
def write_config(project):
    def write(text: str | bytes) -> Project:
        path = project / ".ctxward" / "config.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(text.encode() if isinstance(text, str) else text)
        return Project(project)

    return write


def test_defaults_without_a_file(project):
    config = load(Project(project))

    assert config == Config()
    assert config.source is None
    assert config.dispatch == DispatchConfig(capacity_bytes=262_144, capacity_by_agent={})
    assert config.dispatch.offload is True
    assert config.injection == InjectionConfig(limit_chars=9_000)


def test_an_empty_file_gives_the_defaults(write_config):
    config = load(write_config(""))
    assert config == Config(source=".ctxward/config.yaml")


def test_values_are_read_over_the_defaults(write_config):
    config = load(
        write_config(
            "preset: pantheon\n"
            "dispatch:\n"
            "  capacity_bytes: 131072\n"
            "  capacity_by_agent: {Explore: 65536}\n"
            "  offload: false\n"
            "injection:\n"
            "  limit_chars: 5000\n"
        )
    )

    assert config.preset == "pantheon"
    assert config.dispatch == DispatchConfig(
        capacity_bytes=131_072, capacity_by_agent={"Explore": 65_536}, offload=False
    )
    assert config.injection.limit_chars == 5_000
    assert config.as_dict()["dispatch"]["capacity_bytes"] == 131_072


def test_as_dict_keeps_the_declared_order_and_copies(write_config):
    """`config show` prints as_dict() in field order: what dataclasses.asdict gave."""
    config = load(write_config("scoring:\n  keywords: [{term: flaky}]\n  relevance: {a: {b: 1}}\n"))

    shown = config.as_dict()

    assert list(shown) == [
        "preset",
        "dispatch",
        "injection",
        "reports",
        "scoring",
        "bank",
        "debate",
        "drift",
        "source",
    ]
    assert list(shown["dispatch"]) == ["capacity_bytes", "capacity_by_agent", "offload"]
    assert list(shown["scoring"]) == ["keywords", "ignore", "relevance"]
    assert shown["bank"] == {"total_budget": 100, "phases": 8, "inject_context": True}
    assert shown["scoring"]["keywords"] == (
        {
            "term": "flaky",
            "impact": None,
            "risk": None,
            "novelty": None,
            "category": "custom",
            "forms": ["flaky"],
        },
    )
    assert shown["scoring"]["keywords"][0] is not config.scoring.keywords[0]
    assert shown["drift"] == config.drift and shown["drift"] is not config.drift


def test_defaults_are_fresh_frozen_values():
    first, second = Config(), Config()

    assert first == second and first is not second
    assert first.dispatch.capacity_by_agent is not second.dispatch.capacity_by_agent
    assert first.scoring.relevance is not second.scoring.relevance
    assert first.drift is not second.drift
    assert hash(BankConfig()) == hash(BankConfig(total_budget=100, phases=8))
    assert BankConfig(phases=2) != BankConfig()
    with pytest.raises(TypeError):  # a dict field, as with the frozen dataclass
        hash(first)
    with pytest.raises(AttributeError, match="frozen"):
        first.preset = "peaks"


@pytest.mark.parametrize(
    "text, key",
    [
        ("presett: peaks\n", "'presett'"),
        ("dispatch:\n  capacity: 1024\n", "'capacity'"),
        ("injection:\n  limit: 1000\n", "'limit'"),
    ],
)
def test_unknown_key_names_the_file_and_the_key(write_config, text, key):
    with pytest.raises(BadInput) as error:
        load(write_config(text))
    message = str(error.value)
    assert message.startswith(".ctxward/config.yaml")
    assert f"unknown key {key}" in message


def test_capacity_can_be_lowered_to_the_maximum_but_not_raised(write_config):
    assert load(write_config("dispatch: {capacity_bytes: 262144}\n")).dispatch.capacity_bytes == (
        262_144
    )
    assert load(write_config("dispatch: {capacity_bytes: 2048}\n")).dispatch.capacity_bytes == 2048
    with pytest.raises(
        BadInput, match=r"dispatch\.capacity_bytes: 262145 is outside 1024\.\.262144"
    ):
        load(write_config("dispatch: {capacity_bytes: 262145}\n"))


@pytest.mark.parametrize(
    "text, where",
    [
        ("dispatch: {capacity_bytes: 512}\n", "dispatch.capacity_bytes"),
        ("dispatch: {capacity_bytes: '64K'}\n", "dispatch.capacity_bytes"),
        ("dispatch: {capacity_bytes: true}\n", "dispatch.capacity_bytes"),
        ("dispatch: {capacity_bytes: 2.5e5}\n", "dispatch.capacity_bytes"),
        (
            "dispatch: {capacity_bytes: 4096, capacity_by_agent: {Explore: 8192}}\n",
            "dispatch.capacity_by_agent.Explore",
        ),
        ("dispatch: {offload: 'yes please'}\n", "dispatch.offload"),
        ("injection: {limit_chars: 9501}\n", "injection.limit_chars"),
        ("injection: {limit_chars: 10}\n", "injection.limit_chars"),
        ("preset: nope\n", "preset"),
        ("dispatch: [1, 2]\n", "dispatch"),
        ("- a list\n", ".ctxward/config.yaml"),
    ],
)
def test_bad_values_name_the_key(write_config, text, where):
    with pytest.raises(BadInput) as error:
        load(write_config(text))
    message = str(error.value)
    assert message.startswith(".ctxward/config.yaml")
    assert where in message
    assert "\n" not in message


@pytest.mark.parametrize(
    "text, problem",
    [
        (b"dispatch: {capacity_bytes: 1\n", "YAML error at line"),
        (b"a: b: c\n", "YAML error at line 1"),
        (b"dispatch:\n\t- x\n", "YAML error at line 2"),
        (b"preset: caf\xe9\n", "not UTF-8 (byte 11)"),
        (b"preset: a\x07b\n", "YAML error"),
        (b"!!python/object/apply:os.system ['true']\n", "YAML error"),
    ],
)
def test_bad_yaml_is_one_line(write_config, text, problem):
    with pytest.raises(BadInput) as error:
        load(write_config(text))
    message = str(error.value)
    assert message.startswith(".ctxward/config.yaml: ")
    assert problem in message
    assert "\n" not in message


def test_one_pre_compact_reads_and_parses_the_config_once(
    project, write_config, make_skill, activate_skill, load_payload, run_hook, monkeypatch
):
    """A PreCompact asks for the config from many places (the bank, the sub-agents' folder,
    each feature's settings); the file is read once and parsed once."""
    import yaml

    from ctxward.core import config as config_module
    from ctxward.core import fsutil

    text = "injection:\n  limit_chars: 9000\nbank:\n  total_budget: 100\n"
    write_config(text)
    make_skill("alpha", ["alpha: never push to main"])
    activate_skill("alpha", "one")
    config_module._loaded.clear()
    reads: list[str] = []
    parses: list[str] = []
    real_read, real_load = fsutil.read_regular, yaml.load

    def read(path, *args, **kwargs):
        if str(path).endswith("config.yaml"):
            reads.append(str(path))
        return real_read(path, *args, **kwargs)

    def parse(stream, *args, **kwargs):
        if stream == text:
            parses.append(stream)
        return real_load(stream, *args, **kwargs)

    monkeypatch.setattr(fsutil, "read_regular", read)
    monkeypatch.setattr(yaml, "load", parse)

    code, _, err = run_hook(load_payload("PreCompact.json"))

    assert (code, err) == (0, "")
    assert (len(reads), len(parses)) == (1, 1)
