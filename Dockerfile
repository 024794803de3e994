# One image for the master, the workers and the embedded targets.
# Dependencies are installed in their own layer from pyproject.toml alone, so editing the source does not
# re-download them; the project itself is installed (without dependencies) in the last layer.
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /opt/swarmgauge

COPY pyproject.toml README.md ./
RUN python - <<'PY' > /tmp/requirements.txt
import tomllib
print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))
PY
RUN pip install -r /tmp/requirements.txt && rm /tmp/requirements.txt

COPY protocols/ protocols/
COPY users/ users/
COPY shapes/ shapes/
COPY listeners/ listeners/
COPY reports/ reports/
COPY targets/ targets/
COPY locustfiles/ locustfiles/
COPY swarmgauge/ swarmgauge/
RUN pip install --no-deps . && mkdir -p /runs

RUN useradd --create-home --uid 10001 swarm && chown swarm /runs
USER swarm
WORKDIR /opt/swarmgauge

# 8089: web UI (master); 5557: master <- worker traffic.
EXPOSE 8089 5557
# swarmgauge's web UI listens on 127.0.0.1 unless told otherwise; inside the container it must take the published
# port's traffic (compose publishes it on the host's loopback only).
ENV LOCUST_WEB_HOST=0.0.0.0
ENTRYPOINT ["locust"]
CMD ["--help"]
