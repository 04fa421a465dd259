"""The browser tier as a user meets it: run only in the `browser` extra's environment, where
a Chromium is found (the wheel smoke leaves this file out elsewhere)."""


def test_page_snapshot_of_my_web_ui(page_snapshot, stuntset_browser):
    # skipped, saying why, where no Chromium or no Playwright (the `browser` extra) is found
    assert stuntset_browser.is_connected()
    page_snapshot.page.set_content("<main><h1>My agent</h1><button>Run</button></main>")
    assert page_snapshot.check("home") == "same"  # snapshots/ is committed; CI never writes
