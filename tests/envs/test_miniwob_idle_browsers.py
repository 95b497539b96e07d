"""Idle browsers (``BrowserSettings.idle_browsers``, the project's ``environment.browsers``): a
closed environment's window stays open (blank) and the browser whose last environment closed
stays up, for the next environments, which then start no browser and open no window;
``close_idle_browsers`` ends the browser and leaves no process (counted by pid); the
setting is bounded by ``max_browsers``; the default closes the window and ends a browser
with its last one."""

from __future__ import annotations

import pytest

from hindsight.envs import EnvironmentConfigError, EnvironmentSpec, make_env
from hindsight.envs.miniwob import browser_pool, close_idle_browsers, configure_browsers
from miniwob_checks import living, no_browser_left  # noqa: F401  (fixture)


@pytest.fixture
def one_idle_browser(no_browser_left):  # noqa: F811
    before = configure_browsers()
    configure_browsers(idle_browsers=1)
    yield browser_pool()
    close_idle_browsers()
    configure_browsers(before)


def _play_gold(game: str, seed: int) -> bool:
    env = make_env(EnvironmentSpec("miniwob", game, max_steps=6))
    try:
        env.reset(seed, "train")
        for action in env.gold_actions():
            env.step(action)
        return env.won
    finally:
        env.close()


def test_a_kept_browser_serves_the_next_environment_and_ends_when_told(one_idle_browser):
    pool = one_idle_browser
    started = pool.started
    assert _play_gold("click-button", 3)
    assert pool.live_browsers == 1 and pool.started == started + 1  # kept after its last window closed
    pids = set(pool.browsers[0].pids)
    assert living(pids) == pids
    browser = pool.browsers[0]
    assert len(browser.spares) == 1 and browser.driver.window_handles == browser.spares
    assert browser.driver.current_url == "about:blank"  # the task page left: its scripts stopped
    assert _play_gold("enter-text", 4) and _play_gold("click-test", 5)  # other tasks, the same browser and window
    assert pool.started == started + 1 and len(browser.driver.window_handles) == 1
    envs = [make_env(EnvironmentSpec("miniwob", "click-test", max_steps=2)) for _ in range(3)]
    for seed, env in enumerate(envs):
        env.reset(seed, "train")
    assert len(browser.windows) == 3 and browser.spares == []  # the spare taken, two windows opened
    for env in envs:
        env.close()
    assert browser.windows == set() and len(browser.spares) == 3 and pool.started == started + 1
    assert close_idle_browsers() == 1
    assert pool.browsers == [] and living(pids | pool.seen_pids()) == set()
    assert close_idle_browsers() == 0


def test_a_browser_with_an_environment_in_it_is_not_idle(one_idle_browser):
    pool = one_idle_browser
    env = make_env(EnvironmentSpec("miniwob", "click-test", max_steps=2))
    try:
        env.reset(0, "train")
        assert close_idle_browsers() == 0 and pool.live_browsers == 1
        env.step(env.gold_actions()[0])
        assert env.won
    finally:
        env.close()
    assert pool.live_browsers == 1  # now idle, kept
    assert close_idle_browsers() == 1 and pool.live_browsers == 0


def test_without_idle_browsers_a_browser_ends_with_its_last_window(no_browser_left):  # noqa: F811
    assert configure_browsers().idle_browsers == 0  # the default
    assert _play_gold("click-test", 1)
    assert browser_pool().live_browsers == 0 and living(browser_pool().seen_pids()) == set()


def test_idle_browsers_is_at_most_max_browsers():
    with pytest.raises(EnvironmentConfigError, match="idle_browsers must be an integer from 0 to max_browsers"):
        configure_browsers(max_browsers=1, idle_browsers=2)
    with pytest.raises(EnvironmentConfigError, match="idle_browsers"):
        configure_browsers(idle_browsers=-1)
