"""HDR histograms that are freed when dropped, not when Python's cyclic GC next gets to them.

``hdrh``'s encoder points back at its histogram (``HdrHistogram.encoder.histogram``), so every histogram is a
reference cycle. Ours hold ~190 KB of counts each and the per-step recorder makes and drops several a second; as
cycles they pile up in the oldest GC generation until a full collection, and the generator's RSS climbs with each
pile. The encoder never outlives its histogram here, so its back-reference can be a weak proxy.
"""

from __future__ import annotations

import weakref

from hdrh.histogram import HdrHistogram


def acyclic(histogram: HdrHistogram) -> HdrHistogram:
    """``histogram`` with its encoder's back-reference made weak, so dropping the histogram frees it at once."""
    encoder = histogram.encoder
    if encoder.histogram is not histogram:
        raise TypeError("hdrh changed: the histogram's encoder no longer points back at it; check acyclic()")
    encoder.histogram = weakref.proxy(histogram)
    return histogram
