# One image for the master, the workers and the embedded targets.
# Plain Dockerfile syntax (no heredocs, no BuildKit-only flags), so it builds with the legacy builder of Docker
# Engine 17.05+ as well as with BuildKit; BASE_IMAGE is any Debian-like image with Python >= 3.11 on PATH (the kneo
# target wants 3.12). Dependencies are installed in their own layer from pyproject.toml alone, so editing the source
# or the README does not re-download them; the project itself is installed as a wheel (without dependencies) in the
# last layers.
ARG BASE_IMAGE=python:3.12-slim
FROM ${BASE_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# glibc's per-thread malloc cache fragments a generator's heap at many users (benchmarks/results/generator_soak_1000.md)
ENV GLIBC_TUNABLES=glibc.malloc.tcache_count=0

WORKDIR /opt/swarmgauge

COPY pyproject.toml ./
RUN python3 -c "import tomllib; \
        print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt && rm /tmp/requirements.txt

COPY README.md ./
COPY locustfiles/ locustfiles/
COPY swarmgauge/ swarmgauge/
# A wheel install: `swarmgauge.*` imports come from site-packages (locustfiles/ shipped as swarmgauge.locustfiles),
# the locustfiles stay beside it for their paths (LOCUST_LOCUSTFILE=locustfiles/...).
RUN pip install --no-deps . && rm -rf build *.egg-info && python3 -c "import swarmgauge.shapes, swarmgauge.users.mark_client" \
    && mkdir -p /runs /plans

RUN useradd --create-home --uid 10001 swarm && chown swarm /runs
USER swarm

# 8089: web UI (master); 5557: master <- worker traffic.
EXPOSE 8089 5557
# swarmgauge's web UI listens on 127.0.0.1 unless told otherwise; inside the container it must take the published
# port's traffic (compose publishes it on the host's loopback only).
ENV LOCUST_WEB_HOST=0.0.0.0
ENTRYPOINT ["locust"]
CMD ["--help"]
