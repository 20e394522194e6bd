"""The data-path diagrams: what they say must not contradict what the report measures."""

from __future__ import annotations

from copylab.diagrams import zero_copy_diagram


def test_the_zero_copy_diagram_does_not_say_the_sender_makes_no_copy():
    """Review M7: over veth the deferred copy was measured inside the sender's own sendmsg (95% of its
    samples at 1 thread), so the diagram says where the copy runs instead of 'Sender: no copy'."""
    fig = zero_copy_diagram()
    words = fig.layout.title.subtitle.text + " ".join(a.text for a in fig.layout.annotations)
    assert "Sender: no copy" not in words and "receive<br>path" not in words
    assert "often on the sender's CPU inside its sendmsg" in words and "deferred, on<br>delivery" in words
