"""The switch catalog (catalog/switches.py) and the cable-class rule (catalog/cables.py):
data-sheet figures, lookups, and docs/fabric.md kept in step with the table."""

from __future__ import annotations

import re

import pytest

from clustergen.catalog.cables import ACC, DAC, OPTICAL, TIERS, cable_class
from clustergen.catalog.switches import (
    INFINIBAND_SWITCH_PORTS,
    SWITCH_MODELS,
    USUAL_INFINIBAND_SWITCH,
    CatalogSwitch,
    catalog_switch,
    rate_technology,
    switch_radix,
)
from clustergen.model.network import INFINIBAND_RATES, LINK_GBITS, ROCE_RATES

from support.paths import REPO

FABRIC_DOC = REPO / "docs" / "fabric.md"


def test_the_models_the_issue_names_are_there() -> None:
    for key in (
        "sx6036",
        "sb7800",
        "qm8700",
        "qm8790",
        "qm9700",
        "qm9790",
        "q3400",
        "sn5600",
        "sn4700",
    ):
        assert key in SWITCH_MODELS, key


@pytest.mark.parametrize("model", list(SWITCH_MODELS.values()), ids=list(SWITCH_MODELS))
def test_every_model_has_a_document_and_a_sane_row(model: CatalogSwitch) -> None:
    assert re.match(r"https://[a-z0-9.-]+\.[a-z]+/", model.source), model.source
    assert model.key == model.key.lower() == model.key.strip()
    assert model.rack_units is None or model.rack_units >= 1
    assert model.technology == rate_technology(model.rate)
    # a switch offers each rate once, and every rate is one a fabric can have
    rates = [mode.rate for mode in model.modes]
    assert len(rates) == len(set(rates))
    assert set(rates) <= set(INFINIBAND_RATES + ROCE_RATES)
    # NCCL's SHARP plugin needs in-network reduction in the switch
    assert not model.nccl_sharp or model.sharp is not None


@pytest.mark.parametrize("model", list(SWITCH_MODELS.values()), ids=list(SWITCH_MODELS))
def test_splitting_ports_never_adds_bandwidth(model: CatalogSwitch) -> None:
    """Split modes share the native ports' lanes: ports x rate at a split stays within
    the native ports x rate, and a slower rate never has fewer ports."""
    native = model.ports * model.port_gbits
    for mode in model.modes[1:]:
        assert mode.ports * LINK_GBITS[mode.rate] <= native, mode
        assert LINK_GBITS[mode.rate] < model.port_gbits, mode
        assert mode.ports >= model.ports, mode


def test_radix_at_the_fabric_rate() -> None:
    assert switch_radix("sn5600", "800g") == 64
    assert switch_radix("sn5600", "400g") == 128
    assert switch_radix("sn5600", "200g") == 256
    assert switch_radix("qm9700", "ndr") == 64
    assert switch_radix("qm9700", "hdr") == 64  # HDR's 4 x 50G lanes: two per cage
    assert switch_radix("qm8700", "hdr") == 40
    assert switch_radix("q3400", "xdr") == 144
    assert switch_radix("sb7800", "edr") == 36
    assert switch_radix("sn4700", "400g") == 32


def test_radix_is_none_for_what_the_catalog_does_not_know() -> None:
    assert switch_radix("qm9700", "xdr") is None  # no XDR on Quantum-2
    assert switch_radix("sn5600", "ndr") is None  # an Ethernet switch on InfiniBand
    assert switch_radix("qm9700", "400g") is None  # an InfiniBand switch on RoCE
    assert switch_radix("acme-9000", "ndr") is None
    assert switch_radix(None, "ndr") is None


def test_lookups_ignore_case_and_take_part_numbers() -> None:
    qm9700 = SWITCH_MODELS["qm9700"]
    assert catalog_switch("QM9700") is qm9700
    assert catalog_switch("  qm9700 ") is qm9700
    assert catalog_switch("MQM9700-NS2F") is qm9700
    assert catalog_switch("Q3400-RA") is SWITCH_MODELS["q3400"]
    assert catalog_switch("Quantum-X800") is SWITCH_MODELS["q3400"]
    assert catalog_switch("N9K-C9364D-GX2A") is SWITCH_MODELS["n9k-c9364d-gx2a"]
    assert catalog_switch("DCS-7060DX5-64S") is SWITCH_MODELS["7060dx5-64s"]


def test_unknown_models_are_none() -> None:
    assert catalog_switch(None) is None
    assert catalog_switch("") is None
    assert catalog_switch("qm97") is None
    assert catalog_switch("sn56000") is None


def test_aliases_name_one_model_each() -> None:
    spellings = [key for key in SWITCH_MODELS]
    spellings += [alias for model in SWITCH_MODELS.values() for alias in model.aliases]
    assert len(spellings) == len(set(spellings))


def test_the_usual_infiniband_switch_keeps_its_ports() -> None:
    """resolve.py's default radix per rate: what it was before the catalog."""
    assert INFINIBAND_SWITCH_PORTS == {"fdr": 36, "edr": 36, "hdr": 40, "ndr": 64, "xdr": 144}
    for rate, key in USUAL_INFINIBAND_SWITCH.items():
        assert SWITCH_MODELS[key].rate == rate


def test_sharp_for_nccl_is_quantum_and_later() -> None:
    nccl_sharp = {key for key, model in SWITCH_MODELS.items() if model.nccl_sharp}
    assert nccl_sharp == {"qm8700", "qm8790", "qm9700", "qm9790", "q3400"}


def test_the_docs_table_lists_every_model() -> None:
    text = FABRIC_DOC.read_text(encoding="utf-8")
    section = text.split("## Switch catalog", 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    keys = [re.match(r"\| `([^`]+)`", row).group(1) for row in rows]  # type: ignore[union-attr]
    assert keys == list(SWITCH_MODELS)
    for row, model in zip(rows, SWITCH_MODELS.values(), strict=True):
        modes = ", ".join(f"{mode.ports} x {mode.rate}" for mode in model.modes)
        assert modes in row, (row, modes)
        assert model.source.split()[0] in row, row


def test_copper_within_reach_optical_beyond() -> None:
    assert cable_class("ndr", "node-leaf") == DAC  # in the rack
    assert cable_class("ndr", "node-leaf", 3.0) == DAC
    assert cable_class("400g", "node-leaf", 4.0) == ACC
    assert cable_class("ndr", "node-leaf", 5.5) == OPTICAL
    assert cable_class("hdr", "node-leaf", 2.0) == DAC
    assert cable_class("hdr", "node-leaf", 3.0) == OPTICAL  # no HDR ACC sourced


def test_switch_links_are_optical_unless_short() -> None:
    for tier in ("leaf-spine", "spine-core"):
        assert cable_class("ndr", tier) == OPTICAL
        assert cable_class("ndr", tier, 1.5) == DAC
        assert cable_class("ndr", tier, 2.5) == OPTICAL
        assert cable_class("hdr", tier, 1.0) == OPTICAL  # no switch-to-switch HDR DAC sourced


def test_rates_without_sourced_copper_are_optical() -> None:
    for rate in ("edr", "xdr", "100g", "800g"):
        assert cable_class(rate, "node-leaf", 1.0) == OPTICAL


def test_an_unknown_tier_is_refused() -> None:
    assert "node-leaf" in TIERS
    with pytest.raises(ValueError, match="tier 'leaf-core'"):
        cable_class("ndr", "leaf-core")  # type: ignore[arg-type]
