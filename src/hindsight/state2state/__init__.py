"""State2State tasks: a mid-training stage of goal-reaching tasks made from explored states.

Our reading of State2State (the paper's details are not public): explore an environment with
random and policy rollouts, record every reached state as a set of facts (where the agent is,
what it carries, where objects are, which containers are open, ...), and turn a reached state
into the task "reach a state where <facts>" on the same game and seed, won when those facts all
hold (rule-based matching). RL on such tasks, before RL on the real tasks, teaches the policy to
bring about states it has seen reached.

    facts        the fact vocabulary, matching and the goal's English text (pure)
    extractors   a state's facts read from TextWorldExpress, ScienceWorld or TextWorld
    exploration  an environment wrapper that records reached states during any rollout
    task_set     reached states -> a versioned table of goal tasks (and its schema check)
    goal_env     the goal-conditioned wrapper environment the RL loop trains on
    stage        exploration of the training games and RL on the goal tasks (library calls)
"""
