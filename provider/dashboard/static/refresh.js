// Every element with data-refresh="URL" and data-every="SECONDS" has its
// contents replaced by what URL returns, every SECONDS (our few lines instead
// of a library: the dashboard has no JavaScript build step and no CDN).
document.querySelectorAll("[data-refresh]").forEach((element) => {
  const every = Number(element.dataset.every || 5) * 1000;
  const refresh = async () => {
    try {
      const answer = await fetch(element.dataset.refresh, { headers: { "Accept": "text/html" } });
      if (answer.ok) {
        element.innerHTML = await answer.text();
        element.dataset.refreshedAt = new Date().toISOString();
      }
    } catch (error) {
      element.dataset.refreshError = String(error);  // the server is away: try again later
    }
  };
  setInterval(refresh, every);
});
