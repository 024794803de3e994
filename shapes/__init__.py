"""LoadTestShape classes: step ramps, soaks, open-model arrival rates, bursts, churn, and stage plans."""
