"""fuser.runtime"""
