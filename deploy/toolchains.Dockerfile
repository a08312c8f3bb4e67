# The threadsmith image with the toolchains the agent's commands need: build
# it after the image itself, from the repository's root:
#
#   docker build -t threadsmith .
#   docker build -f deploy/toolchains.Dockerfile -t threadsmith:toolchains .
#
# and run threadsmith:toolchains as the Dockerfile says. The sandbox shows the
# agent /usr read-only, so whatever apt installs there is what it can run; a
# toolchain elsewhere (/opt/…) goes in sandbox.read_only_paths. Keep the
# entry point, the health check and the unprivileged user of the base image.
FROM threadsmith
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential golang-go python3 python3-pip python3-venv nodejs npm \
 && rm -rf /var/lib/apt/lists/*
USER threadsmith
