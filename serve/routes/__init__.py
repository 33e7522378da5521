"""The service's routers: answer (blocking and streamed runs), traces (JSON and the HTML viewer), health."""
