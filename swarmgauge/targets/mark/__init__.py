"""The reference Mark Protocol server: the demarkus server's behaviour, byte for byte, over aioquic (``swarmgauge target mark``)."""
